// Allocating an arcade game server from Agones and minting the player's
// connect token for it: the pieces of server.mjs that need no cluster.
//
// Agones allocates through the Kubernetes API: creating a GameServerAllocation
// (allocation.agones.dev/v1) marks one Ready GameServer of the fleet Allocated
// and answers with its node address and ports. The token names exactly that
// <address>:<port>, so the relay forwards the player to that server and no other.
import { request } from 'node:https';
import { readFileSync } from 'node:fs';
import { mintToken } from '@ricochet/relay';

/** The GameServerAllocation that asks for one Ready game server of `fleet`. */
export function allocationRequest(fleet) {
  return {
    apiVersion: 'allocation.agones.dev/v1',
    kind: 'GameServerAllocation',
    spec: {
      selectors: [{ matchLabels: { 'agones.dev/fleet': fleet } }],
      // Fill allocated nodes first, matching the fleet's Packed scheduling.
      scheduling: 'Packed',
    },
  };
}

/** Why no game server was allocated; `retry` when asking again soon may succeed. */
export class AllocationError extends Error {
  constructor(message, { retry }) {
    super(message);
    this.name = 'AllocationError';
    this.retry = retry;
  }
}

/**
 * The backend a connect token names, from an allocation's answer: the node
 * address and the host port Agones mapped to the game server's `portName`.
 */
export function allocatedBackend(allocation, portName = 'default') {
  const s = allocation?.status ?? {};
  if (s.state === 'UnAllocated') throw new AllocationError('no Ready game server in the fleet', { retry: false });
  if (s.state === 'Contention') throw new AllocationError('allocation contention', { retry: true });
  if (s.state !== 'Allocated') throw new AllocationError(`unexpected allocation state ${JSON.stringify(s.state)}`, { retry: false });
  const port = s.ports?.find((p) => p.name === portName)?.port;
  if (!s.address || !Number.isInteger(port)) throw new AllocationError(`allocated ${s.gameServerName} has no address or no port "${portName}"`, { retry: false });
  // The relay takes IPv6 backends in brackets.
  const host = s.address.includes(':') ? `[${s.address}]` : s.address;
  return { gameServer: s.gameServerName, backend: `${host}:${port}` };
}

/**
 * What the player's client needs: a single-use connect token naming the
 * allocated game server, and where the relays are.
 */
export function connectOffer(allocation, { secret, sub, ttlSeconds = 60, relay, portName = 'default' }) {
  const { gameServer, backend } = allocatedBackend(allocation, portName);
  return { gameServer, backend, token: mintToken(secret, { sub, backend, ttlSeconds }), relay };
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * Creates GameServerAllocations through the Kubernetes API with the pod's
 * service account (RBAC: create on gameserverallocations, allocator.yaml).
 */
export class InClusterAllocator {
  constructor({ namespace, fleet, apiHost = process.env.KUBERNETES_SERVICE_HOST, apiPort = process.env.KUBERNETES_SERVICE_PORT ?? '443', timeoutMs = 5000 }) {
    if (!apiHost) throw new Error('KUBERNETES_SERVICE_HOST is unset: the allocator runs inside the cluster');
    this.namespace = namespace ?? readFileSync(`${SERVICE_ACCOUNT}/namespace`, 'utf8').trim();
    this.fleet = fleet;
    this.target = { host: apiHost, port: Number(apiPort) };
    this.ca = readFileSync(`${SERVICE_ACCOUNT}/ca.crt`);
    this.timeoutMs = timeoutMs;
  }

  /** One allocation, retried on contention a few times; resolves with Agones' answer. */
  async allocate() {
    for (let attempt = 0; ; attempt++) {
      const answer = await this.create();
      if (answer.status?.state !== 'Contention' || attempt >= 3) return answer;
      await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
    }
  }

  create() {
    // The token is re-read each time: the kubelet rotates projected service-account tokens.
    const token = readFileSync(`${SERVICE_ACCOUNT}/token`, 'utf8').trim();
    const body = JSON.stringify(allocationRequest(this.fleet));
    const path = `/apis/allocation.agones.dev/v1/namespaces/${encodeURIComponent(this.namespace)}/gameserverallocations`;
    return new Promise((resolve, reject) => {
      const req = request(
        { ...this.target, method: 'POST', path, ca: this.ca, timeout: this.timeoutMs, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (text += c));
          res.on('end', () => {
            if (res.statusCode !== 201 && res.statusCode !== 200) return reject(new Error(`Kubernetes API ${res.statusCode}: ${text.slice(0, 500)}`));
            try {
              resolve(JSON.parse(text));
            } catch (e) {
              reject(e);
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`Kubernetes API: no answer in ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
