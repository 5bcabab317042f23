//! The game: movement and collision shared with the client's prediction
//! (`sim`), the map (`map`) and one room's authoritative state (`room`).

pub mod map;
pub mod room;
pub mod sim;
