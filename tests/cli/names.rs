//! Properties of the name rules, over generated input: whatever memop accepts gives names that
//! are valid where they land (Kubernetes names, Rust identifiers and modules), and memop never
//! panics on what it refuses.

use memop::names::{Domain, Group, Kind, Plural, ProjectName, Version, check_file_names};
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

    /// Every file name memop makes from a domain, group, kind and plural it accepts fits a file
    /// system (255 bytes, less the suffix of memop's temporary file), and the CRD's name fits
    /// Kubernetes' 253 characters.
    #[test]
    fn an_accepted_api_gives_names_that_fit(
        d in "[a-z]{1,63}(\\.[a-z]{1,63}){0,4}",
        g in "[a-z]{1,63}(\\.[a-z]{1,63}){0,4}",
        k in "[A-Z][a-z]{0,30}([A-Z][a-z]{0,20}){0,2}",
    ) {
        let (Ok(domain), Ok(kind)) = (Domain::parse(&d), Kind::parse(&k)) else { return Ok(()) };
        let Ok(group) = Group::parse(&g, &domain) else {
            // Refused only when even a one-letter kind and plural would not fit.
            prop_assert!(g.len() + d.len() > 180 || Group::parse(&g, &Domain::parse("io").unwrap()).is_err());
            return Ok(());
        };
        let (Ok(plural), Ok(version)) = (Plural::for_kind(&kind), Version::parse("v1alpha1")) else { return Ok(()) };
        if check_file_names(&domain, &group, &version, &kind, &plural).is_ok() {
            let qualified = group.qualified(&domain);
            for name in [
                format!("webhook_in_{qualified}_{plural}.yaml"),
                format!("{qualified}_{plural}.yaml"),
                format!("{}_{}_editor_role.yaml", group.module_name(), kind.snake()),
                format!("{group}_{version}_{}.yaml", kind.lower()),
            ] {
                prop_assert!(name.len() <= memop::names::FILE_NAME_MAX, "{}", name);
            }
            let crd = format!("{plural}.{qualified}");
            prop_assert!(crd.len() <= 253, "{}", crd);
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
