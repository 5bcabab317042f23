// Types for the parts of ricochet-packets.mjs that TypeScript specs import.
/** A valid version-3 HELLO for `connId` (one channel, a random session key), padded to 128 bytes. */
export function helloDatagram(connId: number): Buffer;
/** A DATA packet of `size` bytes for `connId` whose tag is not valid. */
export function dataDatagram(connId: number, size?: number): Buffer;
