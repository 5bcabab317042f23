//! Error messages built without `core::fmt`: `msg!["need 1..=", max,
//! ", got ", n]` concatenates string pieces and integers in decimal. The
//! messages read as before, and the browser's client module (no_std, see
//! `lib.rs`) carries no formatting machinery for them. Public for the
//! bindings' messages only (`ricochet_core::msg!`).

pub use alloc::string::String;

/// One piece of a message.
pub trait Piece {
    fn put(&self, out: &mut String);
}

impl Piece for &str {
    fn put(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for String {
    fn put(&self, out: &mut String) {
        out.push_str(self);
    }
}

fn put_decimal(mut n: u64, out: &mut String) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[i..].iter().map(|&d| d as char));
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Piece for $t {
            fn put(&self, out: &mut String) {
                put_decimal(*self as u64, out);
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64, usize);

impl Piece for i64 {
    fn put(&self, out: &mut String) {
        if *self < 0 {
            out.push('-');
        }
        put_decimal(self.unsigned_abs(), out);
    }
}

/// `msg![piece, …]`: the pieces (string slices, `String`s, integers) joined.
#[doc(hidden)]
#[macro_export]
macro_rules! msg {
    ($($piece:expr),+ $(,)?) => {{
        let mut out = $crate::text::String::new();
        $( $crate::text::Piece::put(&$piece, &mut out); )+
        out
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_read_as_format_would() {
        for n in [0u64, 7, 10, 65507, u64::MAX] {
            assert_eq!(msg!["got ", n, "."], format!("got {n}."));
        }
        for n in [0i64, -1, 42, i64::MIN, i64::MAX] {
            assert_eq!(msg![n], format!("{n}"));
        }
        assert_eq!(
            msg!["a", String::from("b"), 3u8, 4usize, 5u16, 6u32],
            "ab3456"
        );
    }
}
