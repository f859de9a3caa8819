//! JSON Schema → GBNF, for grammar-constrained sampling of structured replies.
//!
//! Our own converter rather than llama.cpp's `json_schema_to_grammar` (which needs the `common`
//! feature) because a 135M model needs a grammar that leaves it no room to wander:
//!
//! - **compact JSON**: no optional whitespace anywhere, so the model never pretty-prints;
//! - **bounded everywhere**: every array has a maximum length (`maxItems`, else
//!   [`GrammarLimits::max_items`]) and every string a maximum length (`maxLength`, else
//!   [`GrammarLimits::max_string_length`]), so a looping model is forced to close the value
//!   instead of repeating itself until the token limit;
//! - **no repeats** where the schema asks for `uniqueItems` over a small enum (the router's
//!   role lists): the grammar tracks which values were already used.
//!
//! Supported: `type` (one or a list), `properties`/`required` (required properties first, then
//! optional ones, in declared order; no additional properties are ever generated), `items`,
//! `minItems`/`maxItems`, `uniqueItems` over enums of at most [`MAX_UNIQUE_ENUM`] values,
//! `minLength`/`maxLength`, `enum`, `const`, `anyOf`/`oneOf` (as alternatives), `allOf`
//! (merged when every part is an object), local `$ref` (`#/$defs/..`, `#/definitions/..`,
//! recursion allowed), integer `minimum`/`maximum`/`exclusive*` (exact, built digit by digit so
//! the grammar stays small for any range), number bounds (exact for non-negative integral
//! bounds, otherwise only the sign is enforced),
//! and free-form values (`{}`, `true`, objects without properties) up to
//! [`GrammarLimits::max_depth`] levels deep. Ignored: `pattern`, `format`,
//! `minProperties`/`maxProperties`, `multipleOf`, `not`, `if`/`then`/`else`.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

use ranges::{int_range, uint_at_least, uint_range};

mod gbnf;
mod ranges;
mod schema_values;

use gbnf::{CHAR_RULE, FRACTION, INT_BODY, UINT_BODY, json_literal, literal, sanitize};
use schema_values::{as_f64, as_u64, enum_values, merge_siblings};

/// An enum with `uniqueItems` is tracked value by value up to this many values (2^n states).
pub const MAX_UNIQUE_ENUM: usize = 10;
/// Integer bounds are clamped to this magnitude (the grammar allows at most 16 digits).
pub const MAX_MAGNITUDE: u64 = 9_999_999_999_999_999;
/// Hard ceiling on `maxItems`, whatever the schema says.
pub const HARD_MAX_ITEMS: u64 = 256;
/// Hard ceiling on `maxLength`, whatever the schema says.
pub const HARD_MAX_STRING_LENGTH: u64 = 4096;

/// Caps applied where the schema sets none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrammarLimits {
    /// Maximum array length when a schema has no `maxItems`.
    pub max_items: u32,
    /// Maximum string length (in characters) when a schema has no `maxLength`.
    pub max_string_length: u32,
    /// Nesting depth of free-form values (schemas that say nothing about their shape).
    pub max_depth: u32,
}

impl Default for GrammarLimits {
    fn default() -> Self {
        Self {
            max_items: 8,
            max_string_length: 200,
            max_depth: 3,
        }
    }
}

/// A schema the converter cannot turn into a grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported JSON Schema at {at}: {problem}")]
pub struct SchemaError {
    /// JSON pointer of the offending sub-schema.
    pub at: String,
    /// What is wrong.
    pub problem: String,
}

/// Converts a JSON Schema into a GBNF grammar (root rule `root`) with the default limits.
pub fn schema_to_gbnf(schema: &Value) -> Result<String, SchemaError> {
    schema_to_gbnf_with(schema, &GrammarLimits::default())
}

/// Converts a JSON Schema into a GBNF grammar (root rule `root`) with explicit limits.
pub fn schema_to_gbnf_with(schema: &Value, limits: &GrammarLimits) -> Result<String, SchemaError> {
    let mut converter = Converter {
        root: schema,
        limits: *limits,
        rules: Vec::new(),
        by_body: HashMap::new(),
        taken: HashSet::new(),
        refs: HashMap::new(),
    };
    converter.taken.insert("root".to_string());
    let expr = converter.visit(schema, "#", "value")?;
    let mut out = format!("root ::= {expr}\n");
    for (name, body) in &converter.rules {
        let _ = writeln!(out, "{name} ::= {body}");
    }
    Ok(out)
}

struct Converter<'a> {
    root: &'a Value,
    limits: GrammarLimits,
    rules: Vec<(String, String)>,
    by_body: HashMap<String, String>,
    taken: HashSet<String>,
    refs: HashMap<String, String>,
}

impl Converter<'_> {
    fn err(&self, at: &str, problem: impl Into<String>) -> SchemaError {
        SchemaError {
            at: at.to_string(),
            problem: problem.into(),
        }
    }

    fn fresh_name(&mut self, hint: &str) -> String {
        let base = sanitize(hint);
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Adds a rule with this body (or reuses an identical one) and returns its name.
    fn rule(&mut self, hint: &str, body: String) -> String {
        if let Some(name) = self.by_body.get(&body) {
            return name.clone();
        }
        let name = self.fresh_name(hint);
        self.by_body.insert(body.clone(), name.clone());
        self.rules.push((name.clone(), body));
        name
    }

    fn string_rule(&mut self, min: u64, max: u64) -> String {
        let ch = self.rule("char", CHAR_RULE.to_string());
        let body = if max == 0 {
            r#""\"\"""#.to_string()
        } else {
            format!(r#""\"" {ch}{{{min},{max}}} "\"""#)
        };
        self.rule(&format!("string-{max}"), body)
    }

    fn visit(&mut self, schema: &Value, at: &str, hint: &str) -> Result<String, SchemaError> {
        let object = match schema {
            Value::Bool(true) => return Ok(self.any(self.limits.max_depth)),
            Value::Bool(false) => return Err(self.err(at, "the schema `false` accepts nothing")),
            Value::Object(object) => object,
            _ => return Err(self.err(at, "a schema must be an object or a boolean")),
        };
        if let Some(reference) = object.get("$ref") {
            let reference = reference
                .as_str()
                .ok_or_else(|| self.err(at, "$ref must be a string"))?;
            return self.reference(reference, at);
        }
        if let Some(value) = object.get("const") {
            return Ok(json_literal(value));
        }
        if let Some(values) = object.get("enum") {
            let values = values
                .as_array()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| self.err(at, "enum must be a non-empty array"))?;
            let body = values
                .iter()
                .map(json_literal)
                .collect::<Vec<_>>()
                .join(" | ");
            return Ok(self.rule(hint, body));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = object.get(key) {
                let options = options
                    .as_array()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| self.err(at, format!("{key} must be a non-empty array")))?;
                let mut alternatives = Vec::new();
                for (i, option) in options.iter().enumerate() {
                    let merged = merge_siblings(object, option, key);
                    alternatives.push(self.visit(
                        &merged,
                        &format!("{at}/{key}/{i}"),
                        &format!("{hint}-{i}"),
                    )?);
                }
                return Ok(self.rule(hint, alternatives.join(" | ")));
            }
        }
        if let Some(parts) = object.get("allOf") {
            let merged = self.merge_all_of(object, parts, at)?;
            return self.visit(&merged, at, hint);
        }
        match object.get("type") {
            Some(Value::String(ty)) => self.typed(object, ty, at, hint),
            Some(Value::Array(types)) => {
                let mut alternatives = Vec::new();
                for ty in types {
                    let ty = ty
                        .as_str()
                        .ok_or_else(|| self.err(at, "type list entries must be strings"))?;
                    alternatives.push(self.typed(object, ty, at, &format!("{hint}-{ty}"))?);
                }
                if alternatives.is_empty() {
                    return Err(self.err(at, "empty type list"));
                }
                Ok(self.rule(hint, alternatives.join(" | ")))
            }
            Some(_) => Err(self.err(at, "type must be a string or a list of strings")),
            None if object.contains_key("properties") => self.typed(object, "object", at, hint),
            None if object.contains_key("items") => self.typed(object, "array", at, hint),
            None => Ok(self.any(self.limits.max_depth)),
        }
    }

    fn reference(&mut self, reference: &str, at: &str) -> Result<String, SchemaError> {
        if let Some(name) = self.refs.get(reference) {
            return Ok(name.clone());
        }
        let pointer = reference.strip_prefix('#').ok_or_else(|| {
            self.err(
                at,
                format!("only local $ref are supported, not {reference}"),
            )
        })?;
        let target = self
            .root
            .pointer(pointer)
            .ok_or_else(|| self.err(at, format!("$ref {reference} points at nothing")))?;
        let hint = pointer.rsplit('/').next().unwrap_or("ref").to_string();
        let name = self.fresh_name(&hint);
        self.refs.insert(reference.to_string(), name.clone());
        let body = self.visit(target, reference, &format!("{hint}-body"))?;
        self.rules.push((name.clone(), body));
        Ok(name)
    }

    fn merge_all_of(
        &self,
        object: &Map<String, Value>,
        parts: &Value,
        at: &str,
    ) -> Result<Value, SchemaError> {
        let parts = parts
            .as_array()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| self.err(at, "allOf must be a non-empty array"))?;
        let mut merged = object.clone();
        merged.remove("allOf");
        let mut properties = merged
            .remove("properties")
            .and_then(|p| p.as_object().cloned())
            .unwrap_or_default();
        let mut required: Vec<Value> = merged
            .remove("required")
            .and_then(|r| r.as_array().cloned())
            .unwrap_or_default();
        for part in parts {
            let part = match part {
                Value::Object(part) => part,
                Value::Bool(true) => continue,
                _ => return Err(self.err(at, "allOf parts must be schemas")),
            };
            if part.keys().any(|k| {
                !matches!(
                    k.as_str(),
                    "type"
                        | "properties"
                        | "required"
                        | "description"
                        | "title"
                        | "additionalProperties"
                )
            }) || part.get("type").is_some_and(|t| t != "object")
            {
                return Err(self.err(
                    at,
                    "allOf is supported only when every part is a plain object schema",
                ));
            }
            if let Some(Value::Object(p)) = part.get("properties") {
                for (k, v) in p {
                    properties.insert(k.clone(), v.clone());
                }
            }
            if let Some(Value::Array(r)) = part.get("required") {
                required.extend(r.iter().cloned());
            }
        }
        merged.insert("type".into(), Value::String("object".into()));
        merged.insert("properties".into(), Value::Object(properties));
        merged.insert("required".into(), Value::Array(required));
        Ok(Value::Object(merged))
    }

    fn typed(
        &mut self,
        object: &Map<String, Value>,
        ty: &str,
        at: &str,
        hint: &str,
    ) -> Result<String, SchemaError> {
        match ty {
            "object" => self.object(object, at, hint),
            "array" => self.array(object, at, hint),
            "string" => {
                let max = as_u64(object.get("maxLength"))
                    .unwrap_or(u64::from(self.limits.max_string_length))
                    .min(HARD_MAX_STRING_LENGTH);
                let min = as_u64(object.get("minLength")).unwrap_or(0).min(max);
                Ok(self.string_rule(min, max))
            }
            "integer" => self.integer(object, hint),
            "number" => Ok(self.number(object, hint)),
            "boolean" => Ok(self.rule("boolean", r#""true" | "false""#.to_string())),
            "null" => Ok(literal("null")),
            other => Err(self.err(at, format!("unknown type {other:?}"))),
        }
    }

    fn object(
        &mut self,
        object: &Map<String, Value>,
        at: &str,
        hint: &str,
    ) -> Result<String, SchemaError> {
        let properties = match object.get("properties") {
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Err(self.err(at, "properties must be an object")),
            None => Map::new(),
        };
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if properties.is_empty() && required.is_empty() {
            let values = match object.get("additionalProperties") {
                Some(Value::Bool(false)) => return Ok(literal("{}")),
                Some(schema @ Value::Object(_)) => self.visit(
                    schema,
                    &format!("{at}/additionalProperties"),
                    &format!("{hint}-value"),
                )?,
                _ => self.any(self.limits.max_depth.saturating_sub(1)),
            };
            let key = self.string_rule(0, 64);
            let max = u64::from(self.limits.max_items.max(1));
            let body = format!(
                r#""{{" ({key} ":" {values} ("," {key} ":" {values}){{0,{}}})? "}}""#,
                max - 1
            );
            return Ok(self.rule(hint, body));
        }

        // Required properties first (declared order; a required name without a schema gets a
        // free-form value), then the optional ones.
        let mut ordered: Vec<(String, Value, bool)> = Vec::new();
        for name in &required {
            let schema = properties.get(name).cloned().unwrap_or(Value::Bool(true));
            if !ordered.iter().any(|(n, _, _)| n == name) {
                ordered.push((name.clone(), schema, true));
            }
        }
        for (name, schema) in &properties {
            if !required.contains(name) {
                ordered.push((name.clone(), schema.clone(), false));
            }
        }
        let mut parts = Vec::new();
        for (name, schema, is_required) in ordered {
            let value = self.visit(
                &schema,
                &format!("{at}/properties/{name}"),
                &format!("{hint}-{name}"),
            )?;
            let key = literal(&format!("{}:", Value::String(name.clone())));
            parts.push((format!("{key} {value}"), is_required));
        }
        let body = if parts.first().is_some_and(|(_, r)| *r) {
            let mut body = String::from(r#""{""#);
            for (i, (part, is_required)) in parts.iter().enumerate() {
                let sep = if i == 0 { "" } else { r#" ",""# };
                if *is_required {
                    let _ = write!(body, "{sep} {part}");
                } else {
                    let _ = write!(body, " ({sep} {part})?");
                }
            }
            body.push_str(r#" "}""#);
            body
        } else {
            // Only optional properties: any non-empty ordered subset, or nothing.
            let mut alternatives = Vec::new();
            for i in 0..parts.len() {
                let mut alt = parts[i].0.clone();
                for (later, _) in &parts[i + 1..] {
                    let _ = write!(alt, r#" ("," {later})?"#);
                }
                alternatives.push(format!("({alt})"));
            }
            format!(r#""{{" ({})? "}}""#, alternatives.join(" | "))
        };
        Ok(self.rule(hint, body))
    }

    fn array(
        &mut self,
        object: &Map<String, Value>,
        at: &str,
        hint: &str,
    ) -> Result<String, SchemaError> {
        let max = as_u64(object.get("maxItems"))
            .unwrap_or(u64::from(self.limits.max_items))
            .min(HARD_MAX_ITEMS);
        let min = as_u64(object.get("minItems")).unwrap_or(0).min(max);
        let items = object.get("items").cloned().unwrap_or(Value::Bool(true));
        if max == 0 {
            return Ok(literal("[]"));
        }
        let unique = object.get("uniqueItems") == Some(&Value::Bool(true));
        if unique && let Some(values) = enum_values(&items) {
            let mut distinct: Vec<Value> = Vec::new();
            for v in values {
                if !distinct.contains(&v) {
                    distinct.push(v);
                }
            }
            if distinct.len() <= MAX_UNIQUE_ENUM {
                return Ok(self.unique_enum_array(&distinct, min, max, hint));
            }
        }
        let item = self.visit(&items, &format!("{at}/items"), &format!("{hint}-item"))?;
        let body = if min == 0 {
            format!(r#""[" ({item} ("," {item}){{0,{}}})? "]""#, max - 1)
        } else {
            format!(r#""[" {item} ("," {item}){{{},{}}} "]""#, min - 1, max - 1)
        };
        Ok(self.rule(hint, body))
    }

    /// Arrays of distinct enum values: one rule per set of values already used.
    fn unique_enum_array(&mut self, values: &[Value], min: u64, max: u64, hint: &str) -> String {
        let n = values.len();
        let max = max.min(n as u64);
        let min = min.min(max);
        let literals: Vec<String> = values.iter().map(json_literal).collect();
        let base = self.fresh_name(hint);
        let state_name = |used: u32| format!("{base}-s{used}");
        let full = (1u32 << n) - 1;
        let mut bodies = Vec::new();
        for used in 1..=full {
            let count = u64::from(used.count_ones());
            if count > max {
                continue;
            }
            let mut alternatives = Vec::new();
            if count >= min {
                alternatives.push(literal("]"));
            }
            if count < max {
                for (i, lit) in literals.iter().enumerate() {
                    if used & (1 << i) == 0 {
                        alternatives.push(format!(r#""," {lit} {}"#, state_name(used | (1 << i))));
                    }
                }
            }
            bodies.push((state_name(used), alternatives.join(" | ")));
        }
        let mut start = Vec::new();
        if min == 0 {
            start.push(literal("]"));
        }
        for (i, lit) in literals.iter().enumerate() {
            start.push(format!("{lit} {}", state_name(1 << i)));
        }
        for (name, body) in bodies {
            self.taken.insert(name.clone());
            self.rules.push((name, body));
        }
        let body = format!(r#""[" ({})"#, start.join(" | "));
        self.rules.push((base.clone(), body));
        base
    }

    fn bounds(object: &Map<String, Value>) -> (Option<f64>, Option<f64>, bool, bool) {
        let mut min = as_f64(object.get("minimum"));
        let mut max = as_f64(object.get("maximum"));
        let mut min_exclusive = false;
        let mut max_exclusive = false;
        if let Some(x) = as_f64(object.get("exclusiveMinimum"))
            && min.is_none_or(|m| x >= m)
        {
            min = Some(x);
            min_exclusive = true;
        }
        if let Some(x) = as_f64(object.get("exclusiveMaximum"))
            && max.is_none_or(|m| x <= m)
        {
            max = Some(x);
            max_exclusive = true;
        }
        (min, max, min_exclusive, max_exclusive)
    }

    fn integer(&mut self, object: &Map<String, Value>, hint: &str) -> Result<String, SchemaError> {
        let (min, max, min_ex, max_ex) = Self::bounds(object);
        let clamp = |x: f64| x.clamp(-(MAX_MAGNITUDE as f64), MAX_MAGNITUDE as f64);
        let lo = min.map(|m| clamp(if min_ex { m.floor() + 1.0 } else { m.ceil() }) as i64);
        let hi = max.map(|m| clamp(if max_ex { m.ceil() - 1.0 } else { m.floor() }) as i64);
        if let (Some(lo), Some(hi)) = (lo, hi)
            && lo > hi
        {
            return Err(SchemaError {
                at: hint.to_string(),
                problem: format!("no integer lies between {lo} and {hi}"),
            });
        }
        let body = match (lo, hi) {
            (None, None) => return Ok(self.rule("integer", INT_BODY.to_string())),
            (Some(lo), Some(hi)) => int_range(lo, hi),
            (Some(lo), None) if lo >= 0 => uint_at_least(lo.unsigned_abs()),
            (Some(lo), None) => format!(
                r#""-" {} | {}"#,
                uint_range(1, lo.unsigned_abs()),
                uint_at_least(0)
            ),
            (None, Some(hi)) if hi >= 0 => format!(
                r#""-" {} | {}"#,
                uint_at_least(1),
                uint_range(0, hi.unsigned_abs())
            ),
            (None, Some(hi)) => format!(r#""-" {}"#, uint_at_least(hi.unsigned_abs())),
        };
        Ok(self.rule(&format!("{hint}-int"), body))
    }

    fn number(&mut self, object: &Map<String, Value>, hint: &str) -> String {
        let (min, max, _, _) = Self::bounds(object);
        let integral = |x: f64| x.fract() == 0.0 && x.abs() <= MAX_MAGNITUDE as f64;
        match (min, max) {
            (Some(lo), Some(hi)) if lo >= 0.0 && integral(lo) && integral(hi) && hi >= lo => {
                // [lo, hi): any fraction; hi itself only with a zero fraction.
                let (lo, hi) = (lo as u64, hi as u64);
                let top = format!(r#"{} ("." "0"{{1,6}})?"#, literal(&hi.to_string()));
                let body = if hi > lo {
                    format!("{} {FRACTION} | {top}", uint_range(lo, hi - 1))
                } else {
                    top
                };
                self.rule(&format!("{hint}-num"), body)
            }
            (Some(lo), None) if lo >= 0.0 && integral(lo) => {
                let body = format!("{} {FRACTION}", uint_at_least(lo as u64));
                self.rule(&format!("{hint}-num"), body)
            }
            (Some(lo), _) if lo >= 0.0 => {
                self.rule("unsigned-number", format!("{UINT_BODY} {FRACTION}"))
            }
            _ => self.rule("number", format!("{INT_BODY} {FRACTION}")),
        }
    }

    /// A free-form JSON value nested at most `depth` levels.
    fn any(&mut self, depth: u32) -> String {
        let string = self.string_rule(0, u64::from(self.limits.max_string_length));
        let number = self.rule("number", format!("{INT_BODY} {FRACTION}"));
        let scalar = self.rule(
            "scalar",
            format!(r#"{string} | {number} | "true" | "false" | "null""#),
        );
        if depth == 0 {
            return scalar;
        }
        let inner = self.any(depth - 1);
        let key = self.string_rule(0, 64);
        let more = self.limits.max_items.max(1) - 1;
        let body = format!(
            r#"{scalar} | "[" ({inner} ("," {inner}){{0,{more}}})? "]" | "{{" ({key} ":" {inner} ("," {key} ":" {inner}){{0,{more}}})? "}}""#
        );
        self.rule(&format!("any-{depth}"), body)
    }
}

#[cfg(test)]
mod tests;
