//! The arcade: an authoritative multiplayer arena on Ricochet's native
//! driver. `codec` is the arcade's messages on the `ricochet-game` crate's
//! bit-packing and quantisation; `game` is the simulation, free of
//! I/O so it is tested on its own; `net` runs rooms on a `UdpServer`;
//! `agones` tells an Agones sidecar the server is Ready and healthy (opt-in).

pub mod agones;
pub mod bots;
pub mod codec;
pub mod game;
pub mod net;
mod snapshot_turns;
