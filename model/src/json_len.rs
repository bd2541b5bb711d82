//! What a JSON value takes as text, counted without building the text: the measure of the
//! caps on stored outputs, read by the engine at every attempt and by the server's memory of
//! instances (which keeps each row's count, so an attempt need not serialize its instance).

use serde_json::Value;

/// Bytes `value` takes as JSON (`serde_json::to_string(value)?.len()`).
pub fn serialized_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_the_text_serde_writes() {
        for value in [json!(null), json!("é\"x"), json!({"a": [1, 2.5, {"b": true}]}), json!([])] {
            assert_eq!(serialized_len(&value), serde_json::to_string(&value).unwrap().len(), "{value}");
        }
    }
}
