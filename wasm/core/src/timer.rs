//! Every deadline a connection has, in one table. `poll_timeout` is its
//! minimum; `next_timer` says which fires next (for debugging).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// Client: retransmit HELLO (doubling), until `Handshake` expires.
    HelloResend = 0,
    /// Client: give up connecting.
    Handshake = 1,
    /// Time-threshold loss detection: an unacked packet becomes lost.
    LossDetection = 2,
    /// Probe timeout: nothing acked for too long, send a probe (tail loss).
    Probe = 3,
    /// Send a delayed acknowledgement.
    Ack = 4,
    /// Nothing ack-eliciting sent for a while: send a PING.
    Keepalive = 5,
    /// Nothing received for too long: close.
    Idle = 6,
    /// After close: stop answering and release the connection.
    Drain = 7,
}

const COUNT: usize = 8;
const ALL: [Timer; COUNT] = [
    Timer::HelloResend,
    Timer::Handshake,
    Timer::LossDetection,
    Timer::Probe,
    Timer::Ack,
    Timer::Keepalive,
    Timer::Idle,
    Timer::Drain,
];

#[derive(Clone, Debug, Default)]
pub struct TimerTable {
    deadlines: [Option<u64>; COUNT],
}

impl TimerTable {
    pub fn set(&mut self, t: Timer, at: u64) {
        self.deadlines[t as usize] = Some(at);
    }
    pub fn stop(&mut self, t: Timer) {
        self.deadlines[t as usize] = None;
    }
    pub fn get(&self, t: Timer) -> Option<u64> {
        self.deadlines[t as usize]
    }
    pub fn stop_all(&mut self) {
        self.deadlines = [None; COUNT];
    }
    /// True (and the timer is stopped) if it was set and is due at `now`.
    pub fn expire(&mut self, t: Timer, now: u64) -> bool {
        match self.deadlines[t as usize] {
            Some(at) if at <= now => {
                self.deadlines[t as usize] = None;
                true
            }
            _ => false,
        }
    }
    /// The earliest deadline and which timer it is.
    pub fn next(&self) -> Option<(Timer, u64)> {
        ALL.iter().filter_map(|&t| self.deadlines[t as usize].map(|at| (t, at))).min_by_key(|&(_, at)| at)
    }
}
