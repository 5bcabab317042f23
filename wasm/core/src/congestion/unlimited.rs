use super::{AckEvent, CongestionController, LossEvent};

/// No congestion control: for tests and closed networks.
#[derive(Debug)]
pub struct Unlimited;

impl CongestionController for Unlimited {
    fn on_sent(&mut self, _: u64, _: u64, _: u64) {}
    fn on_ack(&mut self, _: u64, _: &AckEvent) {}
    fn on_loss(&mut self, _: u64, _: &LossEvent) {}
    fn window(&self) -> u64 {
        u64::MAX
    }
}
