//! JSON columns read so that one row never breaks a read: a stored value that cannot be decoded
//! (nested deeper than serde_json reads, written before Trellis held values to
//! `trellis_model::nesting`) is read as [`unreadable`]'s marker and logged, so the list, the
//! detail, the export and the engine go on with every other row. Rows use these through
//! `#[sqlx(try_from = "Lenient")]` (`LenientOpt` for a nullable column) on their JSON fields.

use serde_json::{json, Value};
use sqlx::decode::Decode;
use sqlx::error::BoxDynError;
use sqlx::types::{Json, Type};
use sqlx::{Database, ValueRef};

/// A JSON column's value, or the marker standing for one that could not be read.
pub struct Lenient(pub Value);

/// A nullable JSON column's value, read like [`Lenient`].
pub struct LenientOpt(pub Option<Value>);

/// What a stored value that cannot be read is shown as.
pub fn unreadable(e: &BoxDynError) -> Value {
    let too_deep = e.downcast_ref::<serde_json::Error>().is_some_and(|e| e.to_string().contains("recursion limit"));
    let why = if too_deep { "nested too deep" } else { "not valid JSON" };
    tracing::warn!(error = %e, "a stored JSON value could not be read; it is shown as an error marker");
    json!({"$error": format!("stored value could not be read: {why}")})
}

impl<'r, DB: Database> Decode<'r, DB> for Lenient
where
    Json<Value>: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Lenient(match <Json<Value> as Decode<'r, DB>>::decode(value) {
            Ok(Json(value)) => value,
            Err(e) => unreadable(&e),
        }))
    }
}

impl<'r, DB: Database> Decode<'r, DB> for LenientOpt
where
    Json<Value>: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.is_null() {
            return Ok(LenientOpt(None));
        }
        Lenient::decode(value).map(|read| LenientOpt(Some(read.0)))
    }
}

macro_rules! typed_as_json {
    ($($lenient:ty),*) => {$(
        impl<DB: Database> Type<DB> for $lenient
        where
            Json<Value>: Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <Json<Value> as Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <Json<Value> as Type<DB>>::compatible(ty)
            }
        }
    )*};
}

typed_as_json!(Lenient, LenientOpt);

impl From<Lenient> for Json<Value> {
    fn from(read: Lenient) -> Self {
        Json(read.0)
    }
}

impl From<LenientOpt> for Option<Value> {
    fn from(read: LenientOpt) -> Self {
        read.0
    }
}

impl From<LenientOpt> for Option<Json<Value>> {
    fn from(read: LenientOpt) -> Self {
        read.0.map(Json)
    }
}
