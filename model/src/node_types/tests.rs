use super::*;

#[test]
fn every_kind_has_its_own_row_named_as_definitions_name_it() {
    let names: Vec<&str> = NodeKind::ALL.iter().map(|k| k.spec().name).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), NodeKind::ALL.len(), "{names:?}");
    for kind in NodeKind::ALL {
        assert_eq!(NodeKind::parse(kind.spec().name), Some(kind));
        assert!(!kind.spec().description.is_empty() && !kind.spec().icon.is_empty());
    }
}

#[test]
fn a_kind_that_runs_ahead_neither_waits_nor_calls_out() {
    for kind in NodeKind::ALL.into_iter().filter(|k| k.spec().runs_ahead) {
        let spec = kind.spec();
        assert_eq!(spec.waits, None, "{kind}");
        assert_ne!(spec.group, PaletteGroup::Calls, "{kind}");
    }
}

#[test]
fn a_kind_whose_fields_are_code_reads_its_context() {
    for kind in NodeKind::ALL {
        let code = kind.spec().fields.iter().any(|f| f.code != Code::Plain);
        assert!(!code || kind.spec().reads_context, "{kind} evaluates code without its context");
    }
}

#[test]
fn fields_read_as_expressions_are_edited_as_expressions() {
    for kind in NodeKind::ALL {
        for f in kind.spec().fields {
            assert_eq!(f.code == Code::Expression, f.input == FieldKind::Expression, "{kind}.{}", f.path);
        }
    }
}

/// What the validator compiles, and how, agrees with the table: give every field a text that
/// says its name, and see which texts `check_config_with` hands over as expressions and which
/// as templates.
#[test]
fn the_validator_compiles_exactly_the_fields_the_table_says_are_code() {
    use crate::config::check_config_with;
    use crate::validate::Text;
    use serde_json::{json, Map, Value};
    for kind in NodeKind::ALL {
        let mut config = Map::new();
        for f in kind.spec().fields {
            let marker = format!("{{{{ {} }}}}", f.name());
            let value = match f.input {
                FieldKind::Number => json!(1),
                FieldKind::Select(choices) => json!(choices[0]),
                FieldKind::List => json!([marker]),
                // Who an approval asks is an object of lists of names (plain, never code).
                FieldKind::Json if f.name() == "assignees" => json!({"users": [marker]}),
                // An object: what `headers` must be, and any JSON may be.
                FieldKind::Json => json!({"x": marker}),
                FieldKind::Version => json!("latest"),
                FieldKind::Toggle => json!(false),
                _ => Value::String(marker),
            };
            config.insert(f.name().to_owned(), value);
        }
        let (mut expressions, mut templates) = (Vec::new(), Vec::new());
        check_config_with(kind, &Value::Object(config), &mut |text| {
            match text {
                Text::Expression(t) => expressions.push(t.to_owned()),
                Text::Template(t) => templates.push(t.to_owned()),
            }
            Ok(())
        });
        let marked = |code: Code| -> Vec<String> {
            let fields = kind.spec().fields.iter().filter(|f| f.code == code);
            fields.map(|f| format!("{{{{ {} }}}}", f.name())).collect()
        };
        assert_eq!(expressions, marked(Code::Expression), "{kind}: expressions");
        assert_eq!(templates, marked(Code::Template), "{kind}: templates");
    }
}
