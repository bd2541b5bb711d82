//! Strict JSON request bodies: the body must be the JSON type the route documents.
//!
//! serde's derived `Deserialize` for a struct also accepts a JSON array, matching fields by
//! position: `[]` is then a struct of defaults. Sent where an object is required, that
//! empties a draft, resets a retention policy or starts a bulk job over every instance.
//! [`from_slice`] deserializes through [`Strict`], a deserializer wrapper that refuses an
//! array wherever a struct is asked for, at any depth, and everything else as serde_json
//! would. (Values serde buffers first — internally tagged and untagged enums, `flatten` —
//! are rebuilt by serde's own deserializer and escape the wrapper; flattened structs ask for
//! a map, which refuses arrays anyway.)
//!
//! A NUL (U+0000) anywhere in a string or key is refused too, naming where it is: Postgres
//! stores neither in `text` nor in `jsonb`, so it must never get past the edge. So is a body
//! nested deeper than stored JSON may be (`depth.rs`).
//!
//! Where an integer is asked for, a float with no fractional part (`7129.0`) is taken as that
//! integer: JSON Schema's `integer` is any number whose fractional part is zero, so a client
//! driven by the OpenAPI document may send one. `7129.5` is still refused. Every refusal of
//! the shape names the field (`list[0].n`), tracked by `serde_path_to_error`.

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use serde_json::Value;
use std::fmt;
use trellis_model::excerpt::excerpt;

mod depth;
mod nul;
pub use nul::{nul_path, refuse_nul};

/// Why a body was refused.
#[derive(Debug)]
pub enum BodyError {
    /// Not JSON at all (400).
    Syntax(String),
    /// JSON, but not the shape the route takes (422), optionally naming where and why
    /// (`code`: the `errors[].code` of the problem).
    Shape { detail: String, path: Option<String>, code: &'static str },
}

/// Parses `body` as `T`: a JSON object (the only top-level type this API takes), without NUL,
/// with no array standing in for a struct.
pub fn from_slice<T: de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, BodyError> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
            return Err(BodyError::Shape {
                detail: format!("the {what} must be a JSON object (`{{...}}`)"),
                path: None,
                code: "invalid_field",
            });
        }
        _ => return Err(BodyError::Syntax(format!("the {what} is not JSON; send a JSON object"))),
    }
    refuse_nul(body)?;
    depth::refuse_deep(body)?;
    let mut json = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(Strict(&mut json)).map_err(|e| refusal(e, what))?;
    json.end().map_err(|e| BodyError::Syntax(format!("the {what} is not valid JSON: {e}")))?;
    Ok(value)
}

/// Reads `T` from a JSON value already parsed (a body read field by field), as strictly as
/// [`from_slice`] reads one from bytes.
pub fn from_value<T: de::DeserializeOwned>(value: Value, what: &str) -> Result<T, BodyError> {
    serde_path_to_error::deserialize(Strict(value)).map_err(|e| refusal(e, what))
}

/// A failed parse as a 400 (not JSON) or a 422 naming the field at fault. What it quotes of
/// the body (a path names the sender's keys; serde quotes a wrong value whole) is cut short.
fn refusal(e: serde_path_to_error::Error<serde_json::Error>, what: &str) -> BodyError {
    const MAX_QUOTED: usize = 300;
    let path = excerpt(&e.path().to_string(), MAX_QUOTED).into_owned();
    let e = e.into_inner();
    let why = excerpt(&e.to_string(), MAX_QUOTED).into_owned();
    match (e.classify(), path.as_str()) {
        (serde_json::error::Category::Data, ".") => {
            BodyError::Shape { detail: format!("invalid {what}: {why}"), path: None, code: "invalid_field" }
        }
        (serde_json::error::Category::Data, _) => BodyError::Shape {
            detail: format!("invalid {what}: `{path}`: {why}"),
            path: Some(path),
            code: "invalid_field",
        },
        _ => BodyError::Syntax(format!("the {what} is not valid JSON: {why}")),
    }
}

/// A deserializer that asks its inner one for the same things, but refuses a sequence
/// where a struct is wanted; everything it hands out is wrapped the same way.
pub struct Strict<D>(pub D);

macro_rules! forward {
    ($want:expr; $($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap { inner: visitor, want: $want })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward!(
        Want::Integer;
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
    );

    forward!(
        Want::Any;
        deserialize_any,
        deserialize_bool,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap { inner: visitor, want: Want::Any })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Wrap { inner: visitor, want: Want::Any })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap { inner: visitor, want: Want::Any })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap { inner: visitor, want: Want::Any })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_struct(name, fields, Wrap { inner: visitor, want: Want::Struct })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap { inner: visitor, want: Want::Any })
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// What the deserializer was asked for, which decides what the visitor lets through.
#[derive(Clone, Copy)]
enum Want {
    Any,
    /// A struct: an array is refused.
    Struct,
    /// An integer: a whole float is handed on as the integer it is.
    Integer,
}

/// The visitor wrapper: hands the inner visitor wrapped accessors.
struct Wrap<V> {
    inner: V,
    want: Want,
}

/// 2^64, the first float above every `u64`; its negative half is the last below every `i64`.
const TWO_TO_THE_64: f64 = 18_446_744_073_709_551_616.0;

/// `v` handed to `visitor` as the integer it is when its fractional part is zero. Any other
/// float (`7129.5`, or one beyond every integer type) goes to the visitor as a float, which
/// refuses it saying what it takes (`expected u32`).
fn whole_number<'de, V: Visitor<'de>, E: de::Error>(v: f64, visitor: V) -> Result<V::Value, E> {
    let whole = v.fract() == 0.0;
    if whole && (0.0..TWO_TO_THE_64).contains(&v) {
        visitor.visit_u64(v as u64)
    } else if whole && (-TWO_TO_THE_64 / 2.0..0.0).contains(&v) {
        visitor.visit_i64(v as i64)
    } else {
        visitor.visit_f64(v)
    }
}

macro_rules! visit {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        match self.want {
            Want::Integer => whole_number(v, self.inner),
            Want::Any | Want::Struct => self.inner.visit_f64(v),
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Strict(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Strict(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        if matches!(self.want, Want::Struct) {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &"a JSON object"));
        }
        self.inner.visit_seq(Strict(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(Strict(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(Strict(data))
    }
}

/// A seed whose value is deserialized strictly.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Strict(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Strict<A> {
    type Error = A::Error;
    type Variant = Strict<A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Seed(seed))?;
        Ok((value, Strict(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap { inner: visitor, want: Want::Any })
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap { inner: visitor, want: Want::Struct })
    }
}

#[cfg(test)]
mod tests;
