// Names of the simulator's network presets (no wasm: a UI or a relay option can
// list them without loading the simulator).
export const NETWORK_PROFILES = ['perfect', 'lan', 'wifi', 'mobile_lossy', 's1_clean', 's1_1pct', 's1_5pct', 's1_bursty'] as const;
export type NetworkProfileName = (typeof NETWORK_PROFILES)[number];
