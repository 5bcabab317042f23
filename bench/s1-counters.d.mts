interface LabNamespaces {
  nsA: string;
  nsB: string;
}
/** One OUTPUT rule per port in each namespace: A sends to `port`, B answers from it. */
export function installCounters(lab: LabNamespaces, peers: { ipProto: 'udp' | 'tcp'; port: number }[]): Promise<void>;
/** IP packets and bytes (headers included) both ways, per port. */
export function readCounters(lab: LabNamespaces): Promise<Record<string, { packets: number; bytes: number }>>;
export function tcpCongestionControl(ns: string): Promise<string>;
