use super::*;
use serde_json::json;

#[test]
fn compact_object_with_required_first() {
    let grammar = schema_to_gbnf(&json!({
        "type": "object",
        "properties": {
            "note": {"type": "string", "maxLength": 10},
            "status": {"enum": ["done", "blocked"]}
        },
        "required": ["status"]
    }))
    .unwrap();
    assert!(grammar.starts_with("root ::= value\n"), "{grammar}");
    assert!(
        grammar.contains(r#""{" "\"status\":" value-status ( "," "\"note\":" string-10)? "}""#),
        "{grammar}"
    );
    assert!(grammar.contains(r#"value-status ::= "\"done\"" | "\"blocked\"""#));
    assert!(grammar.contains(r#"char{0,10}"#));
    assert!(!grammar.contains(" ws"), "no whitespace rules: {grammar}");
}

#[test]
fn arrays_and_strings_are_capped_by_default() {
    let grammar = schema_to_gbnf(&json!({
        "type": "array", "items": {"type": "string"}
    }))
    .unwrap();
    assert!(grammar.contains("{0,7}"), "{grammar}");
    assert!(grammar.contains("char{0,200}"), "{grammar}");
    let grammar = schema_to_gbnf(&json!({
        "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3
    }))
    .unwrap();
    assert!(grammar.contains("{1,2}"), "{grammar}");
}

#[test]
fn unique_enum_arrays_never_repeat() {
    let grammar = schema_to_gbnf(&json!({
        "type": "array", "uniqueItems": true, "minItems": 1,
        "items": {"enum": ["a", "b"]}
    }))
    .unwrap();
    // After "a" only "b" or the end may follow.
    assert!(
        grammar.contains(r#"value-s1 ::= "]" | "," "\"b\"" value-s3"#),
        "{grammar}"
    );
    assert!(grammar.contains(r#"value-s3 ::= "]""#), "{grammar}");
    assert!(grammar.contains(r#"value ::= "[" ("\"a\"" value-s1 | "\"b\"" value-s2)"#));
}

#[test]
fn integer_bounds_in_schemas() {
    let grammar = schema_to_gbnf(&json!({"type": "integer", "minimum": 1, "maximum": 3})).unwrap();
    assert!(grammar.contains("value-int ::= ([1-3])"), "{grammar}");
    let grammar = schema_to_gbnf(&json!({"type": "integer", "exclusiveMinimum": 0})).unwrap();
    assert!(grammar.contains("[1-9] [0-9]{1,15}"), "{grammar}");
    assert!(schema_to_gbnf(&json!({"type": "integer", "minimum": 5, "maximum": 2})).is_err());
}

#[test]
fn refs_and_recursion() {
    let grammar = schema_to_gbnf(&json!({
        "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}
        }}},
        "$ref": "#/$defs/node"
    }))
    .unwrap();
    assert!(grammar.starts_with("root ::= node\n"), "{grammar}");
    assert!(grammar.contains("node ::= "), "{grammar}");
}

#[test]
fn rejects_what_it_cannot_express() {
    assert!(schema_to_gbnf(&json!(false)).is_err());
    assert!(schema_to_gbnf(&json!({"$ref": "http://example.com/x"})).is_err());
    assert!(schema_to_gbnf(&json!({"type": "decimal"})).is_err());
}

#[test]
fn literals_escape_quotes_and_controls() {
    assert_eq!(literal("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
}
