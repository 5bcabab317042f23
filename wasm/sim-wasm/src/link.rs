use ricochet_sim::{self as sim, LinkConfig, LossModel, NetworkProfile};
use wasm_bindgen::prelude::*;

use crate::{deadline, micros, Scratch};

/// One direction of the seeded network simulator (see `ricochet_sim::link`).
#[wasm_bindgen]
pub struct Link {
    link: sim::Link,
    io: Scratch,
    out: Vec<u8>,
}

#[wasm_bindgen]
impl Link {
    /// A link from a named preset (`perfect`, `lan`, `wifi`, `mobile_lossy`,
    /// `s1_clean`, `s1_1pct`, `s1_5pct`, `s1_bursty`); `upstream` picks the
    /// client-to-server direction.
    #[wasm_bindgen(js_name = fromProfile)]
    pub fn from_profile(name: &str, upstream: bool, seed: f64) -> Result<Link, JsError> {
        let p = NetworkProfile::by_name(name)
            .ok_or_else(|| JsError::new(&format!("unknown network profile {name:?}")))?;
        let cfg = if upstream {
            p.client_to_server
        } else {
            p.server_to_client
        };
        Ok(Link {
            link: sim::Link::new(cfg, seed as u64),
            io: Scratch::default(),
            out: Vec::new(),
        })
    }

    /// A custom link. `loss` is the mean loss rate; `burst_correlation` > 0
    /// makes it Gilbert-Elliott bursty (P(loss | previous lost)).
    #[wasm_bindgen(constructor)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        latency_us: f64,
        jitter_us: f64,
        loss: f64,
        burst_correlation: f64,
        duplicate: f64,
        reorder: f64,
        rate_bytes_per_sec: f64,
        seed: f64,
    ) -> Result<Link, JsError> {
        let cfg = config(
            latency_us,
            jitter_us,
            loss,
            burst_correlation,
            duplicate,
            reorder,
            rate_bytes_per_sec,
        );
        cfg.validate().map_err(|e| JsError::new(&e))?;
        Ok(Link {
            link: sim::Link::new(cfg, seed as u64),
            io: Scratch::default(),
            out: Vec::new(),
        })
    }

    /// Change the settings live; queued datagrams keep their schedule.
    #[wasm_bindgen(js_name = setParams)]
    #[allow(clippy::too_many_arguments)]
    pub fn set_params(
        &mut self,
        latency_us: f64,
        jitter_us: f64,
        loss: f64,
        burst_correlation: f64,
        duplicate: f64,
        reorder: f64,
        rate_bytes_per_sec: f64,
    ) -> Result<(), JsError> {
        let cfg = config(
            latency_us,
            jitter_us,
            loss,
            burst_correlation,
            duplicate,
            reorder,
            rate_bytes_per_sec,
        );
        cfg.validate().map_err(|e| JsError::new(&e))?;
        self.link.set_config(cfg);
        Ok(())
    }

    #[wasm_bindgen(js_name = ioReserve)]
    pub fn io_reserve(&mut self, len: usize) -> usize {
        self.io.reserve(len) as usize
    }

    /// Put the datagram written at `ioReserve` on the link.
    pub fn send(&mut self, now: f64, len: usize) {
        self.link.send(micros(now), self.io.get(len));
    }

    /// Next arrival time in µs, or -1.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self) -> f64 {
        deadline(self.link.poll_timeout())
    }

    /// Length of the next datagram due by `now` (at `outPtr`), or -1.
    #[wasm_bindgen(js_name = pollDeliver)]
    pub fn poll_deliver(&mut self, now: f64) -> i32 {
        match self.link.poll_deliver(micros(now)) {
            Some(d) => {
                self.out = d;
                self.out.len() as i32
            }
            None => -1,
        }
    }
    #[wasm_bindgen(js_name = outPtr)]
    pub fn out_ptr(&self) -> usize {
        self.out.as_ptr() as usize
    }

    /// [sent, delivered, lost, queue_dropped, oversize_dropped, duplicated,
    /// reordered, bytes_sent, bytes_delivered, in_flight]
    pub fn stats(&self) -> Vec<f64> {
        let s = self.link.stats();
        [
            s.sent,
            s.delivered,
            s.lost,
            s.queue_dropped,
            s.oversize_dropped,
            s.duplicated,
            s.reordered,
            s.bytes_sent,
            s.bytes_delivered,
            s.in_flight,
        ]
        .iter()
        .map(|&x| x as f64)
        .collect()
    }
}

fn config(
    latency_us: f64,
    jitter_us: f64,
    loss: f64,
    burst: f64,
    duplicate: f64,
    reorder: f64,
    rate: f64,
) -> LinkConfig {
    let loss = if loss <= 0.0 || loss.is_nan() {
        LossModel::None
    } else if burst > 0.0 {
        LossModel::bursty(loss, burst)
    } else {
        LossModel::iid(loss)
    };
    LinkConfig {
        latency_us: micros(latency_us),
        jitter_us: micros(jitter_us),
        loss,
        duplicate,
        reorder,
        reorder_extra_us: micros(latency_us).max(1_000),
        rate_bytes_per_sec: micros(rate),
        queue_bytes: if rate > 0.0 { 256 << 10 } else { 0 },
        ..LinkConfig::default()
    }
}
