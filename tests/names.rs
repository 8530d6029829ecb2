//! Properties of the name rules, over generated input: whatever memop accepts gives names that
//! are valid where they land (Kubernetes names, Rust identifiers and modules), and memop never
//! panics on what it refuses.

use memop::names::{Group, Kind, Plural, ProjectName};
use proptest::prelude::*;

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "static",
    "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do",
    "final", "gen", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// An RFC 1035 label: lowercase letters, digits and `-`, starting with a letter, ending with a
/// letter or digit, at most 63 characters.
fn is_rfc1035_label(s: &str) -> bool {
    s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A Rust identifier that is not a keyword.
fn is_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&s)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn an_accepted_kind_gives_valid_names(s in "[A-Z][A-Za-z0-9]{0,20}|\\PC{0,12}") {
        if let Ok(kind) = Kind::parse(&s) {
            prop_assert!(is_rfc1035_label(&kind.lower()), "singular {:?}", kind.lower());
            prop_assert!(is_identifier(&kind.snake()), "module {:?}", kind.snake());
            prop_assert!(is_identifier(kind.as_str()), "type {:?}", kind.as_str());
            prop_assert!(kind.kebab().len() <= 63);
            if let Ok(plural) = Plural::for_kind(&kind) {
                prop_assert!(is_rfc1035_label(plural.as_str()), "plural {plural:?}");
            }
            if let Some(short) = kind.short_name() {
                prop_assert!(is_rfc1035_label(&short), "short name {short:?}");
            }
        }
    }

    #[test]
    fn an_accepted_group_gives_a_valid_module(s in "[a-z][a-z0-9.-]{0,20}|\\PC{0,12}") {
        let domain = memop::names::Domain::parse("example.com").unwrap();
        if let Ok(group) = Group::parse(&s, &domain) {
            prop_assert!(is_identifier(&group.module_name()), "module {:?}", group.module_name());
            let qualified = group.qualified(&domain);
            prop_assert!(qualified.len() <= 253);
            prop_assert!(qualified.split('.').all(|label| !label.is_empty() && label.len() <= 63));
        }
    }

    #[test]
    fn an_accepted_project_name_gives_a_crate_name(s in "[a-z][a-z0-9-]{0,20}|\\PC{0,12}") {
        if let Ok(name) = ProjectName::parse(&s) {
            prop_assert!(is_identifier(&name.crate_name()), "crate {:?}", name.crate_name());
            prop_assert!(is_rfc1035_label(name.as_ref()), "project name {:?}", name.as_ref());
        }
    }

    #[test]
    fn an_accepted_plural_is_a_label(s in "[a-z][a-z0-9-]{0,20}|\\PC{0,12}") {
        if let Ok(plural) = Plural::parse(&s) {
            prop_assert!(is_rfc1035_label(plural.as_str()), "plural {plural:?}");
        }
    }
}
