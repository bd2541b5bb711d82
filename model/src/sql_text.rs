//! Domain values stored in text columns (feature `sqlx`, which only the server turns on, so
//! the SPA never links sqlx). A value is written as its name and read back by it; a name
//! this build does not know is a decode error that names it, never a default.

/// Implements sqlx's `Type`, `Encode` and `Decode` for `$ty` as text, through its
/// `as_str(self) -> &'static str` and `parse(&str) -> Option<$ty>`, for every database whose
/// `str` is text. `$what` names the value in the error for an unknown name.
/// With `unknown => $fallback`, a name this build does not know decodes as `$fallback`
/// instead (for values a newer Trellis may have written that must not stop this one).
#[macro_export]
macro_rules! sqlx_text {
    (@impls $ty:ty, $from_name:expr) => {
        impl<DB: ::sqlx::Database> ::sqlx::Type<DB> for $ty
        where
            str: ::sqlx::Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <str as ::sqlx::Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <str as ::sqlx::Type<DB>>::compatible(ty)
            }
        }

        impl<'q, DB: ::sqlx::Database> ::sqlx::Encode<'q, DB> for $ty
        where
            &'q str: ::sqlx::Encode<'q, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut <DB as ::sqlx::Database>::ArgumentBuffer<'q>,
            ) -> ::std::result::Result<::sqlx::encode::IsNull, ::sqlx::error::BoxDynError> {
                <&'q str as ::sqlx::Encode<'q, DB>>::encode_by_ref(&self.as_str(), buf)
            }
        }

        impl<'r, DB: ::sqlx::Database> ::sqlx::Decode<'r, DB> for $ty
        where
            &'r str: ::sqlx::Decode<'r, DB>,
        {
            fn decode(
                value: <DB as ::sqlx::Database>::ValueRef<'r>,
            ) -> ::std::result::Result<Self, ::sqlx::error::BoxDynError> {
                let name = <&'r str as ::sqlx::Decode<'r, DB>>::decode(value)?;
                let from_name: fn(&str) -> ::std::result::Result<$ty, ::sqlx::error::BoxDynError> = $from_name;
                from_name(name)
            }
        }
    };
    ($ty:ty, $what:literal) => {
        $crate::sqlx_text!(@impls $ty, |name: &str| <$ty>::parse(name).ok_or_else(|| ::std::format!("unknown {} `{name}`", $what).into()));
    };
    ($ty:ty, $what:literal, unknown => $fallback:expr) => {
        $crate::sqlx_text!(@impls $ty, |name: &str| ::std::result::Result::<$ty, ::sqlx::error::BoxDynError>::Ok(<$ty>::parse(name).unwrap_or($fallback)));
    };
}

crate::sqlx_text!(crate::InstanceStatus, "instance status");
crate::sqlx_text!(crate::NodeStatus, "node status");
crate::sqlx_text!(crate::trace::EventKind, "history entry kind");
crate::sqlx_text!(crate::Role, "role");
crate::sqlx_text!(crate::UserSource, "user source");
crate::sqlx_text!(crate::JobKind, "job kind");
crate::sqlx_text!(crate::JobStatus, "job status");
crate::sqlx_text!(crate::TriggerKind, "trigger kind");
crate::sqlx_text!(crate::DeliveryOutcome, "delivery outcome");
crate::sqlx_text!(crate::WaitKind, "wait kind");
crate::sqlx_text!(crate::AlertEvent, "alert event");
crate::sqlx_text!(crate::api::AlertWhen, "alert rule event");
crate::sqlx_text!(crate::AlertDeliveryStatus, "alert delivery status");
