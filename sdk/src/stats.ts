// Named view of the core's stats vector (order fixed in wasm/wasm/src/events.rs).

export interface ChannelStats {
  messagesSent: number;
  messagesDelivered: number;
  queuedMessages: number;
  unackedMessages: number;
}

export interface ConnectionStats {
  rttMs: number;
  rttVarMs: number;
  minRttMs: number;
  /** Fraction of our ack-eliciting packets declared lost (pure ACKs are not tracked). */
  lossOut: number;
  /** Fraction of the peer's packets that never arrived over the link (before FEC repair). */
  lossIn: number;
  /** Fraction of the peer's packets still missing after FEC repair (lost repair packets included). */
  residualLossIn: number;
  /** Peer packets rebuilt from FEC repair, with no round trip. */
  fecRecovered: number;
  /** Bytes of FEC repair packets sent. */
  fecRepairBytesOut: number;
  /** FEC repair packets sent. */
  fecRepairPacketsOut: number;
  /** Loss rate the peer last reported on our packets (what our FEC adapts to). */
  fecPeerLoss: number;
  /** P(lost | previous lost) the peer last reported on our packets. */
  fecPeerBurst: number;
  packetsOut: number;
  packetsIn: number;
  bytesOut: number;
  bytesIn: number;
  /** Ack-eliciting packets declared lost (never more than once each). */
  packetsLost: number;
  retransmissions: number;
  /**
   * Packets whose reliable data went again because their ACK was overdue on
   * a thin stream (a game's few packets per round trip), before any loss was
   * known; some had only lost their ACK.
   */
  earlyResends: number;
  /** Ack-eliciting packets sent: the ones tracked for loss (`packetsOut` counts pure ACKs too). */
  elicitingPacketsOut: number;
  duplicates: number;
  malformed: number;
  /** Datagrams dropped because their tag (or HELLO key) did not verify: not from this session's peer. */
  unauthenticated: number;
  /** Authentic packets dropped as numbered too far ahead of the largest received (a conforming peer never sends one). */
  tooFarAhead: number;
  noRoom: number;
  overheadBytesOut: number;
  payloadBytesOut: number;
  congestionWindow: number;
  bytesInFlight: number;
  sendBufferBytes: number;
  recvBufferBytes: number;
  channels: ChannelStats[];
}

export function decodeStats(v: ArrayLike<number>): ConnectionStats {
  const n = v[30] ?? 0;
  const channels: ChannelStats[] = [];
  for (let i = 0; i < n; i++) {
    const b = 31 + i * 4;
    channels.push({ messagesSent: v[b]!, messagesDelivered: v[b + 1]!, queuedMessages: v[b + 2]!, unackedMessages: v[b + 3]! });
  }
  return {
    rttMs: v[0]! / 1000,
    rttVarMs: v[1]! / 1000,
    minRttMs: v[2]! / 1000,
    lossOut: v[3]!,
    lossIn: v[4]!,
    packetsOut: v[5]!,
    packetsIn: v[6]!,
    bytesOut: v[7]!,
    bytesIn: v[8]!,
    packetsLost: v[9]!,
    retransmissions: v[10]!,
    duplicates: v[11]!,
    malformed: v[12]!,
    noRoom: v[13]!,
    overheadBytesOut: v[14]!,
    payloadBytesOut: v[15]!,
    congestionWindow: v[16]!,
    bytesInFlight: v[17]!,
    sendBufferBytes: v[18]!,
    recvBufferBytes: v[19]!,
    residualLossIn: v[20]!,
    fecRecovered: v[21]!,
    fecRepairBytesOut: v[22]!,
    fecRepairPacketsOut: v[23]!,
    fecPeerLoss: v[24]!,
    fecPeerBurst: v[25]!,
    earlyResends: v[26]!,
    elicitingPacketsOut: v[27]!,
    unauthenticated: v[28]!,
    tooFarAhead: v[29]!,
    channels,
  };
}
