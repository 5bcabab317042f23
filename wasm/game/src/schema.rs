//! Typed message schemas: message kinds declared once, with bit widths and
//! quantisers; the Rust types, `encode` and `decode` follow. The Rust twin
//! of `defineMessages` in `@ricochet/game` (`game/src/schema.ts`), byte for
//! byte: the same declaration on both sides reads the other's bytes.
//!
//! ```
//! use ricochet_game::{define_messages, define_struct, Quantizer};
//!
//! const POSITION: Quantizer = Quantizer::new(0.0, 0.125, 14);
//!
//! define_struct! {
//!     /// One player in a snapshot.
//!     #[derive(Clone, Debug, PartialEq)]
//!     pub struct Player {
//!         pub id: uint(5),
//!         pub x: quantized(POSITION),
//!         pub y: quantized(POSITION),
//!         pub hp: uint(2).max(3),
//!     }
//! }
//!
//! define_messages! {
//!     /// What the server and its clients say.
//!     #[derive(Clone, Debug, PartialEq)]
//!     pub enum Message(id_bits = 4) {
//!         Join = 1 { room: uint(8), name: string(16) },
//!         Snapshot = 9 { tick: aligned(uint(32)), players: array(nested(Player), 32).count_bits(6) },
//!     }
//! }
//!
//! let bytes = Message::Join { room: 7, name: "Zoë".into() }.encode()?;
//! assert_eq!(bytes, [0x71, 0x00, 0x04, 0x5a, 0x6f, 0xc3, 0xab]); // what @ricochet/game writes
//! assert_eq!(Message::decode(&bytes)?, Message::Join { room: 7, name: "Zoë".into() });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! | field | Rust type | bits | TypeScript |
//! |---|---|---|---|
//! | `uint(bits)`, `.max(m)` | `u32`, 0 ..= max (default 2^bits − 1) | bits | `uint(bits, { max })` |
//! | `int(bits)` | `i32`, −2^(bits−1) .. 2^(bits−1) | bits | `int(bits)` |
//! | `bool()` | `bool` | 1 | `bool()` |
//! | `quantized(q)` (`q` a `const`) | `f64` on `q`'s grid, clamped | `q.bits` | `quantized(q)` |
//! | `angle(bits)` | `f64`, radians, wrapping | bits | `angle(bits)` |
//! | `string(max_bytes)`, `.truncate(false)` | `String`, cut on a character boundary (or refused) | aligned, 8 + 8 × length | `string(maxBytes, { truncate })` |
//! | `array(item, max)`, `.min(n)`, `.count_bits(b)` | `Vec<item>` | count − min, then the items | `array(item, { max, min, countBits })` |
//! | `nested(Type)` | a [`define_struct!`](crate::define_struct) type | its fields | `struct(fields)` |
//! | `aligned(field)` | `field`'s | padding + field | `aligned(field)` |
//!
//! What is checked, as in TypeScript:
//!
//! - **When compiled:** ids are distinct and fit in `id_bits`; widths, maxima
//!   and counts fit (a bad declaration is a compile error).
//! - **When encoding:** every value fits its field, else an [`EncodeError`]
//!   naming it (`Join.room: 300 is not in 0..=255`).
//! - **When decoding:** the id is known, every count, length and bounded
//!   value is within its maximum, and the bytes end with the message. Bad
//!   bytes give a [`DecodeError`], never a panic, and an array's count is
//!   checked against its maximum and against the bytes left before anything
//!   is allocated for it.
//!
//! Two kinds with one id do not compile:
//!
//! ```compile_fail,E0080
//! ricochet_game::define_messages! {
//!     enum Clash(id_bits = 2) { A = 1 {}, B = 1 {} }
//! }
//! ```
//!
//! nor does an id too wide for `id_bits`, or a maximum its bits cannot hold:
//!
//! ```compile_fail,E0080
//! ricochet_game::define_messages! {
//!     enum Wide(id_bits = 2) { A = 4 {} }
//! }
//! ```
//!
//! ```compile_fail,E0080
//! ricochet_game::define_struct! {
//!     struct Hp { hp: uint(2).max(4) }
//! }
//! ```

use std::fmt;
use std::marker::PhantomData;

use crate::bits::{BitReader, BitWriter, DecodeError};
use crate::quantize::{decode_angle, encode_angle, Quantizer};

/// A value that does not fit its field: a bug in the sender. Names the field
/// (`Message.field`, or `Struct.field`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError {
    /// The field, as `Kind.field`.
    pub field: &'static str,
    /// What is wrong with the value.
    pub reason: String,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for EncodeError {}

fn misuse(field: &'static str, reason: String) -> EncodeError {
    EncodeError { field, reason }
}

/// How one field is written and read. The schema macros build these from
/// the field declarations ([`uint`], [`array()`], …); a type of your own may
/// implement it too.
pub trait Field {
    /// The field's Rust type.
    type Value;
    /// The fewest bits an encoding takes (bounds an array's count before
    /// anything is allocated).
    fn min_bits(&self) -> usize;
    /// Writes `value`, or says why it does not fit (naming `path`).
    fn write(
        &self,
        w: &mut BitWriter,
        value: &Self::Value,
        path: &'static str,
    ) -> Result<(), EncodeError>;
    /// Reads a value; bad bytes give a [`DecodeError`] naming `path` where it
    /// has a name.
    fn read(&self, r: &mut BitReader<'_>, path: &'static str) -> Result<Self::Value, DecodeError>;
}

/// A struct declared with [`define_struct!`](crate::define_struct): its fields in order, no tag.
pub trait Struct: Sized {
    /// The fewest bits an encoding takes.
    fn min_bits() -> usize;
    /// Writes every field in order.
    fn write_fields(&self, w: &mut BitWriter) -> Result<(), EncodeError>;
    /// Reads every field in order.
    fn read_fields(r: &mut BitReader<'_>) -> Result<Self, DecodeError>;
}

const fn mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// An unsigned integer field: [`uint`].
#[derive(Clone, Copy, Debug)]
pub struct Uint {
    bits: u32,
    max: u32,
}

/// An unsigned integer of `bits` bits (0..=32), at most 2^bits − 1 unless
/// [`Uint::max`] says less.
pub const fn uint(bits: u32) -> Uint {
    assert!(bits <= 32, "uint: bits must be 0..=32");
    Uint {
        bits,
        max: mask(bits),
    }
}

impl Uint {
    /// At most `max` (checked when encoding and decoding).
    pub const fn max(self, max: u32) -> Uint {
        assert!(max <= mask(self.bits), "uint: max does not fit in its bits");
        Uint {
            bits: self.bits,
            max,
        }
    }
}

impl Field for Uint {
    type Value = u32;
    fn min_bits(&self) -> usize {
        self.bits as usize
    }
    fn write(&self, w: &mut BitWriter, v: &u32, path: &'static str) -> Result<(), EncodeError> {
        if *v > self.max {
            return Err(misuse(path, format!("{v} is not in 0..={}", self.max)));
        }
        w.write_bits(*v, self.bits);
        Ok(())
    }
    fn read(&self, r: &mut BitReader<'_>, path: &'static str) -> Result<u32, DecodeError> {
        let v = r.read_bits(self.bits)?;
        if v > self.max {
            return Err(DecodeError::OutOfRange(path));
        }
        Ok(v)
    }
}

/// A signed integer field: [`int`].
#[derive(Clone, Copy, Debug)]
pub struct Int {
    bits: u32,
}

/// A signed integer of `bits` bits (2..=32), in −2^(bits−1) .. 2^(bits−1),
/// written offset by 2^(bits−1).
pub const fn int(bits: u32) -> Int {
    assert!(bits >= 2 && bits <= 32, "int: bits must be 2..=32");
    Int { bits }
}

impl Int {
    fn half(&self) -> i64 {
        1i64 << (self.bits - 1)
    }
}

impl Field for Int {
    type Value = i32;
    fn min_bits(&self) -> usize {
        self.bits as usize
    }
    fn write(&self, w: &mut BitWriter, v: &i32, path: &'static str) -> Result<(), EncodeError> {
        let half = self.half();
        let v = i64::from(*v);
        if v < -half || v >= half {
            return Err(misuse(path, format!("{v} is not in {}..{half}", -half)));
        }
        // In 0 .. 2^bits, so it fits the u32 the writer takes.
        w.write_bits((v + half) as u32, self.bits);
        Ok(())
    }
    fn read(&self, r: &mut BitReader<'_>, _path: &'static str) -> Result<i32, DecodeError> {
        // In −2^(bits−1) .. 2^(bits−1), so it fits an i32.
        Ok((i64::from(r.read_bits(self.bits)?) - self.half()) as i32)
    }
}

/// A one-bit field: [`bool()`].
#[derive(Clone, Copy, Debug)]
pub struct Bool;

/// One bit.
pub const fn bool() -> Bool {
    Bool
}

impl Field for Bool {
    type Value = bool;
    fn min_bits(&self) -> usize {
        1
    }
    fn write(&self, w: &mut BitWriter, v: &bool, _path: &'static str) -> Result<(), EncodeError> {
        w.write_bool(*v);
        Ok(())
    }
    fn read(&self, r: &mut BitReader<'_>, _path: &'static str) -> Result<bool, DecodeError> {
        r.read_bool()
    }
}

/// A quantised real number: [`quantized`].
#[derive(Clone, Copy, Debug)]
pub struct Quantized(Quantizer);

/// A real number on `q`'s grid, clamped to its range when written (the
/// reader sees `q.snap(value)`).
pub const fn quantized(q: Quantizer) -> Quantized {
    assert!(
        q.bits >= 1 && q.bits <= 32,
        "quantized: bits must be 1..=32"
    );
    Quantized(q)
}

impl Field for Quantized {
    type Value = f64;
    fn min_bits(&self) -> usize {
        self.0.bits as usize
    }
    fn write(&self, w: &mut BitWriter, v: &f64, _path: &'static str) -> Result<(), EncodeError> {
        w.write_bits(self.0.encode(*v), self.0.bits);
        Ok(())
    }
    fn read(&self, r: &mut BitReader<'_>, _path: &'static str) -> Result<f64, DecodeError> {
        Ok(self.0.decode(r.read_bits(self.0.bits)?))
    }
}

/// An angle field: [`angle`].
#[derive(Clone, Copy, Debug)]
pub struct Angle {
    bits: u32,
}

/// An angle in radians as `bits` bits (1..=32), wrapping; read back in
/// `[0, 2π)`.
pub const fn angle(bits: u32) -> Angle {
    assert!(bits >= 1 && bits <= 32, "angle: bits must be 1..=32");
    Angle { bits }
}

impl Field for Angle {
    type Value = f64;
    fn min_bits(&self) -> usize {
        self.bits as usize
    }
    fn write(&self, w: &mut BitWriter, v: &f64, _path: &'static str) -> Result<(), EncodeError> {
        w.write_bits(encode_angle(*v, self.bits), self.bits);
        Ok(())
    }
    fn read(&self, r: &mut BitReader<'_>, _path: &'static str) -> Result<f64, DecodeError> {
        Ok(decode_angle(r.read_bits(self.bits)?, self.bits))
    }
}

/// A string field: [`string`].
#[derive(Clone, Copy, Debug)]
pub struct Str {
    max_bytes: usize,
    truncate: bool,
}

/// A string: byte-aligned, a length byte and its UTF-8, at most `max_bytes`
/// (≤ 255). A longer one is cut on a character boundary when written, or
/// refused with [`Str::truncate`]`(false)`.
pub const fn string(max_bytes: usize) -> Str {
    assert!(max_bytes <= 255, "string: max_bytes must be 0..=255");
    Str {
        max_bytes,
        truncate: true,
    }
}

impl Str {
    /// Whether a longer string is cut (true, the default) or an error.
    pub const fn truncate(self, truncate: bool) -> Str {
        Str {
            max_bytes: self.max_bytes,
            truncate,
        }
    }
}

impl Field for Str {
    type Value = String;
    fn min_bits(&self) -> usize {
        8
    }
    fn write(&self, w: &mut BitWriter, v: &String, path: &'static str) -> Result<(), EncodeError> {
        if !self.truncate && v.len() > self.max_bytes {
            return Err(misuse(
                path,
                format!("longer than {} bytes", self.max_bytes),
            ));
        }
        w.write_string(v, self.max_bytes);
        Ok(())
    }
    fn read(&self, r: &mut BitReader<'_>, path: &'static str) -> Result<String, DecodeError> {
        r.read_string(self.max_bytes, path)
    }
}

/// A field starting at a byte boundary: [`aligned`].
#[derive(Clone, Copy, Debug)]
pub struct Aligned<F>(F);

/// `field`, starting at a byte boundary (a 32-bit `uint` there is 4
/// little-endian bytes).
pub const fn aligned<F>(field: F) -> Aligned<F> {
    Aligned(field)
}

impl<F: Field> Field for Aligned<F> {
    type Value = F::Value;
    fn min_bits(&self) -> usize {
        self.0.min_bits()
    }
    fn write(
        &self,
        w: &mut BitWriter,
        v: &F::Value,
        path: &'static str,
    ) -> Result<(), EncodeError> {
        w.align();
        self.0.write(w, v, path)
    }
    fn read(&self, r: &mut BitReader<'_>, path: &'static str) -> Result<F::Value, DecodeError> {
        r.align();
        self.0.read(r, path)
    }
}

/// A list field: [`array()`].
#[derive(Clone, Copy, Debug)]
pub struct Array<F> {
    item: F,
    min: usize,
    max: usize,
    count_bits: u32,
}

/// The fewest bits that hold `n`.
const fn bits_for(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

/// A list of `item`s, at most `max`, its count first (in the fewest bits
/// that hold `max − min`, unless [`Array::count_bits`] says otherwise).
pub const fn array<F>(item: F, max: usize) -> Array<F> {
    assert!(bits_for(max) <= 32, "array: max needs more than 32 bits");
    Array {
        item,
        min: 0,
        max,
        count_bits: bits_for(max),
    }
}

impl<F: Copy> Array<F> {
    /// At least `min` items; the count is written as count − min.
    /// (The count takes the fewest bits that hold max − min unless
    /// [`Array::count_bits`] came first.)
    pub const fn min(self, min: usize) -> Array<F> {
        let Array {
            item,
            min: old_min,
            max,
            count_bits,
        } = self;
        assert!(min <= max, "array: min over max");
        let count_bits = if count_bits == bits_for(max - old_min) {
            bits_for(max - min)
        } else {
            count_bits
        };
        Array {
            item,
            min,
            max,
            count_bits,
        }
    }

    /// Writes the count in `bits` bits (0..=32).
    pub const fn count_bits(self, bits: u32) -> Array<F> {
        let Array { item, min, max, .. } = self;
        assert!(
            bits <= 32 && (max - min) as u64 <= mask(bits) as u64,
            "array: the counts do not fit in count_bits"
        );
        Array {
            item,
            min,
            max,
            count_bits: bits,
        }
    }
}

impl<F: Field> Field for Array<F> {
    type Value = Vec<F::Value>;
    fn min_bits(&self) -> usize {
        self.count_bits as usize + self.min * self.item.min_bits()
    }
    fn write(
        &self,
        w: &mut BitWriter,
        v: &Vec<F::Value>,
        path: &'static str,
    ) -> Result<(), EncodeError> {
        if v.len() < self.min || v.len() > self.max {
            return Err(misuse(
                path,
                format!("{} items, not {}..={}", v.len(), self.min, self.max),
            ));
        }
        // At most max − min, which count_bits holds (checked when declared).
        w.write_bits((v.len() - self.min) as u32, self.count_bits);
        v.iter().try_for_each(|x| self.item.write(w, x, path))
    }
    fn read(
        &self,
        r: &mut BitReader<'_>,
        path: &'static str,
    ) -> Result<Vec<F::Value>, DecodeError> {
        let n = r.read_bits(self.count_bits)? as usize + self.min;
        if n > self.max {
            return Err(DecodeError::OutOfRange(path));
        }
        // Refuse a count the bytes left cannot hold before allocating for it.
        if n.saturating_mul(self.item.min_bits()) > r.remaining_bits() {
            return Err(DecodeError::Truncated);
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.item.read(r, path)?);
        }
        Ok(out)
    }
}

/// A [`define_struct!`](crate::define_struct) type as a field: [`Nested::NEW`], written
/// `nested(Type)` in a declaration.
pub struct Nested<T>(PhantomData<T>);

// By hand: derived impls would ask for `T: Copy`.
impl<T> Clone for Nested<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Nested<T> {}

impl<T> Nested<T> {
    /// The field.
    pub const NEW: Nested<T> = Nested(PhantomData);
}

impl<T: Struct> Field for Nested<T> {
    type Value = T;
    fn min_bits(&self) -> usize {
        T::min_bits()
    }
    fn write(&self, w: &mut BitWriter, v: &T, _path: &'static str) -> Result<(), EncodeError> {
        v.write_fields(w)
    }
    fn read(&self, r: &mut BitReader<'_>, _path: &'static str) -> Result<T, DecodeError> {
        T::read_fields(r)
    }
}

/// Checks a message set's ids when compiled: each fits in `id_bits` (1..=32)
/// and no two are equal.
#[doc(hidden)]
pub const fn check_ids(id_bits: u32, ids: &[u32]) {
    assert!(
        id_bits >= 1 && id_bits <= 32,
        "define_messages: id_bits must be 1..=32"
    );
    let mut i = 0;
    while i < ids.len() {
        assert!(
            ids[i] <= mask(id_bits),
            "define_messages: an id does not fit in id_bits"
        );
        let mut j = i + 1;
        while j < ids.len() {
            assert!(
                ids[i] != ids[j],
                "define_messages: two messages share an id"
            );
            j += 1;
        }
        i += 1;
    }
}

/// The Rust type of a field declaration.
#[doc(hidden)]
#[macro_export]
macro_rules! __schema_type {
    (uint $($rest:tt)*) => { u32 };
    (int $($rest:tt)*) => { i32 };
    (bool $($rest:tt)*) => { bool };
    (quantized $($rest:tt)*) => { f64 };
    (angle $($rest:tt)*) => { f64 };
    (string $($rest:tt)*) => { ::std::string::String };
    (aligned ($($inner:tt)*)) => { $crate::__schema_type!($($inner)*) };
    (array ($ik:ident ($($ia:tt)*) $(. $im:ident ($($ima:tt)*))*, $($args:tt)*) $($chain:tt)*) => {
        ::std::vec::Vec<$crate::__schema_type!($ik ($($ia)*) $(. $im ($($ima)*))*)>
    };
    (nested ($t:ty)) => { $t };
}

/// The [`Field`] of a field declaration.
#[doc(hidden)]
#[macro_export]
macro_rules! __schema_field {
    (aligned ($($inner:tt)*)) => { $crate::schema::aligned($crate::__schema_field!($($inner)*)) };
    (array ($ik:ident ($($ia:tt)*) $(. $im:ident ($($ima:tt)*))*, $($args:tt)*) $(. $m:ident ($($ma:tt)*))*) => {
        $crate::schema::array($crate::__schema_field!($ik ($($ia)*) $(. $im ($($ima)*))*), $($args)*) $(. $m ($($ma)*))*
    };
    (nested ($t:ty)) => { $crate::schema::Nested::<$t>::NEW };
    ($k:ident ($($a:tt)*) $(. $m:ident ($($ma:tt)*))*) => { $crate::schema::$k($($a)*) $(. $m ($($ma)*))* };
}

/// Declares a struct whose fields are written in order, with no tag: an
/// array item or a part of a message, as `nested(Type)`. The twin of
/// `struct({ … })` in `@ricochet/game`. Implements [`schema::Struct`].
///
/// ```
/// use ricochet_game::{define_struct, BitReader, BitWriter, schema::Struct};
///
/// define_struct! {
///     #[derive(Debug, PartialEq)]
///     pub struct Frame { pub keys: uint(4), pub fire: bool(), pub aim: angle(8) }
/// }
/// let mut w = BitWriter::new();
/// Frame { keys: 5, fire: true, aim: 0.0 }.write_fields(&mut w)?;
/// assert_eq!(w.finish(), [0x15, 0x00]);
/// # Ok::<(), ricochet_game::EncodeError>(())
/// ```
///
/// [`schema::Struct`]: crate::schema::Struct
#[macro_export]
macro_rules! define_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $kind:ident ($($args:tt)*) $(. $m:ident ($($ma:tt)*))* ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $crate::__schema_type!($kind ($($args)*) $(. $m ($($ma)*))*), )*
        }

        impl $crate::schema::Struct for $name {
            fn min_bits() -> usize {
                0 $( + $crate::schema::Field::min_bits(&$crate::__schema_field!($kind ($($args)*) $(. $m ($($ma)*))*)) )*
            }
            fn write_fields(&self, _w: &mut $crate::BitWriter) -> ::std::result::Result<(), $crate::EncodeError> {
                $( $crate::schema::Field::write(
                    &$crate::__schema_field!($kind ($($args)*) $(. $m ($($ma)*))*),
                    _w,
                    &self.$field,
                    ::std::concat!(::std::stringify!($name), ".", ::std::stringify!($field)),
                )?; )*
                ::std::result::Result::Ok(())
            }
            fn read_fields(_r: &mut $crate::BitReader<'_>) -> ::std::result::Result<Self, $crate::DecodeError> {
                ::std::result::Result::Ok($name {
                    $( $field: $crate::schema::Field::read(
                        &$crate::__schema_field!($kind ($($args)*) $(. $m ($($ma)*))*),
                        _r,
                        ::std::concat!(::std::stringify!($name), ".", ::std::stringify!($field)),
                    )?, )*
                })
            }
        }

        // Every field declaration is checked when compiled.
        const _: () = { $( let _ = $crate::__schema_field!($kind ($($args)*) $(. $m ($($ma)*))*); )* };
    };
}

/// One message kind of [`define_messages!`](crate::define_messages): its write and read arms.
#[doc(hidden)]
#[macro_export]
macro_rules! __schema_message {
    (write $self:ident, $w:ident, $id_bits:expr, $variant:ident = $id:literal { $( $field:ident : $kind:ident ($($args:tt)*) $(. $m:ident ($($ma:tt)*))* ),* }) => {
        if let Self::$variant { $($field),* } = $self {
            $w.write_bits($id, $id_bits);
            $( $crate::schema::Field::write(
                &$crate::__schema_field!($kind ($($args)*) $(. $m ($($ma)*))*),
                $w,
                $field,
                ::std::concat!(::std::stringify!($variant), ".", ::std::stringify!($field)),
            )?; )*
            return ::std::result::Result::Ok(());
        }
    };
    (read $r:ident, $tag:ident, $variant:ident = $id:literal { $( $field:ident : $kind:ident ($($args:tt)*) $(. $m:ident ($($ma:tt)*))* ),* }) => {
        if $tag == $id {
            return ::std::result::Result::Ok(Self::$variant {
                $( $field: $crate::schema::Field::read(
                    &$crate::__schema_field!($kind ($($args)*) $(. $m ($($ma)*))*),
                    $r,
                    ::std::concat!(::std::stringify!($variant), ".", ::std::stringify!($field)),
                )?, )*
            });
        }
    };
}

/// Declares message kinds: an enum with a variant per kind, each written as
/// its id in `id_bits` bits, then its fields in order. The twin of
/// `defineMessages` in `@ricochet/game`: the same declaration on both sides
/// (ids, field order, widths, quantisers) reads the other's bytes. See the
/// [module documentation](crate::schema) for the field kinds.
///
/// Generates, on the enum: `ID_BITS`, `id(&self)`, `encode(&self)`,
/// `write(&self, &mut BitWriter)` (to batch several in one datagram),
/// `decode(&[u8])` (one whole message) and `read(&mut BitReader)`.
///
/// ```
/// use ricochet_game::define_messages;
///
/// define_messages! {
///     #[derive(Debug, PartialEq)]
///     pub enum Chat(id_bits = 2) {
///         Say = 1 { text: string(64) },
///         Leave = 2 {},
///     }
/// }
/// let bytes = Chat::Say { text: "hi".into() }.encode()?;
/// assert_eq!(Chat::decode(&bytes)?, Chat::Say { text: "hi".into() });
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! define_messages {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident (id_bits = $id_bits:literal) {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $id:literal {
                    $( $(#[$fmeta:meta])* $field:ident : $kind:ident ($($args:tt)*) $(. $m:ident ($($ma:tt)*))* ),* $(,)?
                }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$vmeta])*
                $variant {
                    $( $(#[$fmeta])* $field: $crate::__schema_type!($kind ($($args)*) $(. $m ($($ma)*))*), )*
                },
            )*
        }

        impl $name {
            /// Bits of the leading id.
            pub const ID_BITS: u32 = $id_bits;

            /// The id of this message's kind.
            pub fn id(&self) -> u32 {
                match self {
                    $( Self::$variant { .. } => $id, )*
                }
            }

            /// Appends this message to `w` (to prefix or batch it). On an
            /// error `w` holds part of the message: drop it.
            #[allow(irrefutable_let_patterns, unreachable_code)]
            pub fn write(&self, w: &mut $crate::BitWriter) -> ::std::result::Result<(), $crate::EncodeError> {
                $( $crate::__schema_message!(write self, w, $id_bits, $variant = $id { $( $field : $kind ($($args)*) $(. $m ($($ma)*))* ),* }); )*
                ::std::unreachable!("every variant is written above")
            }

            /// This message's bytes; a value that does not fit its field is an error naming it.
            pub fn encode(&self) -> ::std::result::Result<::std::vec::Vec<u8>, $crate::EncodeError> {
                let mut w = $crate::BitWriter::with_capacity(32);
                self.write(&mut w)?;
                ::std::result::Result::Ok(w.finish())
            }

            /// One message from a reader, leaving it after the message (for several in one datagram).
            pub fn read(r: &mut $crate::BitReader<'_>) -> ::std::result::Result<Self, $crate::DecodeError> {
                let tag = r.read_bits($id_bits)?;
                $( $crate::__schema_message!(read r, tag, $variant = $id { $( $field : $kind ($($args)*) $(. $m ($($ma)*))* ),* }); )*
                ::std::result::Result::Err($crate::DecodeError::UnknownTag(tag))
            }

            /// One whole message from `bytes`: bad bytes (truncated, an unknown
            /// id, a value over its bound, bytes left over) are a `DecodeError`,
            /// never a panic.
            pub fn decode(bytes: &[u8]) -> ::std::result::Result<Self, $crate::DecodeError> {
                let mut r = $crate::BitReader::new(bytes);
                let m = Self::read(&mut r)?;
                r.finish()?;
                ::std::result::Result::Ok(m)
            }
        }

        // Ids and every field declaration are checked when compiled.
        const _: () = {
            $crate::schema::check_ids($id_bits, &[$($id),*]);
            $( $( let _ = $crate::__schema_field!($kind ($($args)*) $(. $m ($($ma)*))*); )* )*
        };
    };
}
