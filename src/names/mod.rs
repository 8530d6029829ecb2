//! Validated user-supplied names, and every spelling memop derives from them.
//!
//! Flags such as `--domain`, `--group`, `--version` and `--kind` end up in Kubernetes object names
//! (CRDs, namespaces, labels), in Rust identifiers (crate, module and type names) and in file paths.
//! Each flag gets a newtype here whose only constructor validates it, so code that holds a [`Kind`]
//! or a [`Group`] never checks it again. Where a name lands in a Kubernetes object the rules are
//! kubebuilder's (`pkg/model/resource`); where it also becomes Rust, the Rust rules are added.
//!
//! Every error is one line: `invalid <flag> "<value>": <rule> (e.g. <valid example>)`.
//!
//! - this module: the rules every name shares (labels, subdomains, the error shape) and the
//!   names the generated code reserves;
//! - `kubernetes`: the names of an API (domain, project, group, version, kind, plural);
//! - `plural`: kubebuilder's pluralizer (flect), word for word;
//! - `operand`: what an operand controller deploys (image, port, command, user) and `--owner`.

pub mod builtin;
pub mod external;
mod kubernetes;
mod operand;
mod plural;

use std::fmt;
use std::str::FromStr;

use anyhow::{Result, anyhow};

pub use kubernetes::{Domain, Group, Kind, Plural, ProjectName, Version, check_file_names};
pub use operand::{ContainerCommand, ContainerPort, Image, RunAsUser, check_owner, repository};

/// Longest RFC 1123 / RFC 1035 label (a namespace, a label value, one part of a DNS name).
const LABEL_MAX: usize = 63;
/// Longest RFC 1123 subdomain (an API group, a CRD name).
const SUBDOMAIN_MAX: usize = 253;

/// Longest file name Linux file systems take (`NAME_MAX`, in bytes).
const NAME_MAX: usize = 255;
/// What memop adds to a file's name for the temporary sibling it writes first
/// (`scaffold::plan::create_temp`: `.<name>.<pid>-<nanos, hex>-<attempt>.memop-tmp`): two dots,
/// a PID of at most 10 digits, 16 hex digits of nanoseconds (until 2554), an attempt below 100,
/// two `-` and `.memop-tmp`.
const TEMP_NAME_EXTRA: usize = 2 + 10 + 1 + 16 + 1 + 2 + 10;
/// Longest name a generated file may have.
pub const FILE_NAME_MAX: usize = NAME_MAX - TEMP_NAME_EXTRA;

/// Rust keywords, strict and reserved (2024 edition): none can name a crate or module.
const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "gen", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Whether `c` must not reach a generated file: a control character (a newline, a tab, …) or an
/// invisible format character (Unicode category Cf: bidi controls, zero-width joiners, a byte
/// order mark, …), which would make the file read differently from what it holds.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{0600}'..='\u{0605}'
                | '\u{061C}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{0890}'..='\u{0891}'
                | '\u{08E2}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{110BD}'
                | '\u{110CD}'
                | '\u{13430}'..='\u{1343F}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0001}'
                | '\u{E0020}'..='\u{E007F}'
                // Line and paragraph separators (Zl, Zp): a line break that is not `\n`.
                | '\u{2028}'
                | '\u{2029}'
                // Default-ignorable code points that render as nothing: the combining grapheme
                // joiner, Hangul fillers, Mongolian and other variation selectors.
                | '\u{034F}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FFA0}'
                | '\u{E0100}'..='\u{E01EF}'
        )
}

/// Crate names Cargo rejects (`test`, its build directories) or that shadow a sysroot crate.
const RESERVED_CRATES: &[&str] =
    &["test", "build", "deps", "examples", "incremental", "std", "core", "alloc", "proc_macro"];

/// Kinds whose generated struct would shadow a prelude name the generated code itself uses
/// (kube's `CustomResource` derive writes `status: Option<…>`, controllers return `Result`).
const CLASHING_KINDS: &[&str] = &[
    "Self",
    "Option",
    "Some",
    "None",
    "Result",
    "Ok",
    "Err",
    "String",
    "Vec",
    "Box",
    "Default",
    "Clone",
    "Copy",
    "Send",
    "Sync",
    "Sized",
    "Drop",
    "Fn",
    "FnMut",
    "FnOnce",
    "From",
    "Into",
    "TryFrom",
    "TryInto",
    "Iterator",
    "IntoIterator",
    "Extend",
    "ToString",
    "ToOwned",
    "AsRef",
    "AsMut",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "Future",
    "IntoFuture",
    "Unpin",
];

/// Names that the files generated for a kind (its API module, controller, tests and benchmark)
/// import or declare: a kind of the same name would clash with them (E0252/E0255).
/// `names_imported_by_the_templates_are_reserved` (in `scaffold::templates`) keeps this list
/// complete when a template changes.
pub const GENERATED_NAMES: &[&str] = &[
    "Action",
    "Api",
    "ApiResource",
    "Arc",
    "BTreeMap",
    "Builder",
    "Capabilities",
    "Client",
    "Cluster",
    "Condition",
    "Conditions",
    "Container",
    "ContainerPort",
    "Context",
    "Controller",
    "CustomResource",
    "DEPLOYMENTS",
    "DeleteParams",
    "Deployment",
    "DeploymentSpec",
    "Deserialize",
    "Duration",
    "DynamicObject",
    "Error",
    "Event",
    "EventType",
    "FINALIZER",
    "HashMap",
    "IMAGE",
    "IMAGE_ENV",
    "Instant",
    "Instruments",
    "JsonSchema",
    "LabelSelector",
    "ListParams",
    "Manager",
    "Mutex",
    "NAME",
    "ObjectMeta",
    "Observed",
    "Operand",
    "Owned",
    "Patch",
    "PatchParams",
    "PodSecurityContext",
    "PodSpec",
    "PodTemplateSpec",
    "PostParams",
    "REPORT_WAIT",
    "RESYNC",
    "ROLLOUT_WAIT",
    "RULES",
    "Reconciler",
    "Recorder",
    "Report",
    "Resource",
    "ResourceExt",
    "ResourceQuota",
    "Rollout",
    "Rollouts",
    "Rule",
    "Rules",
    "SeccompProfile",
    "SecurityContext",
    "Serialize",
    "Shared",
    "StreamExt",
    "TestEnv",
    "Truth",
    "Verb",
    "WAIT",
    "Workloads",
];

/// The templates of `src/api/mod.rs`, where each group's module is declared (`pub mod <group>;`):
/// the file itself and every fragment inserted into it.
/// `the_templates_of_the_api_module_are_all_scanned` keeps this list complete.
const API_MODULE_TEMPLATES: &[&str] = &[
    include_str!("../../templates/init/src/api/mod.rs.tera"),
    include_str!("../../templates/resource/src/api/mod.rs@api-groups.tera"),
    include_str!("../../templates/resource/src/api/mod.rs@crds.tera"),
    include_str!("../../templates/resource/src/api/mod.rs@storage-versions.tera"),
];

/// The lowercase names `src/api/mod.rs` uses besides its groups' modules: the first segment of
/// every path (`kube::CustomResourceExt`, `use k8s_openapi::…`), each name it imports or
/// declares as a module. A group's module of the same name would shadow the crate there (a
/// module in scope wins over an extern crate, or makes a `use` ambiguous) or clash with the
/// import. Any other name is fine for a group, `core` and `std` included: the file does not use
/// them, and no other file sees the group's module unqualified (they write `crate::api::<group>`).
pub fn api_module_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| API_MODULE_TEMPLATES.iter().flat_map(|text| module_names_of(text)).collect())
}

/// The lowercase names the Rust of `template` uses as a path's first segment, imports (a `use`
/// item's last segment or alias) or declares as a module; its comments and Tera's `{{ … }}`,
/// `{% … %}` and `{# … #}` (which stand for the project's own names) left out.
fn module_names_of(template: &str) -> Vec<String> {
    let text = crate::embedded::without_tera(template, "TERA");
    let code: String =
        text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n");
    // Identifiers, `::` and every other character, in order.
    let mut tokens: Vec<&str> = Vec::new();
    let mut rest = code.as_str();
    while let Some(c) = rest.chars().next() {
        let len = if c.is_ascii_alphanumeric() || c == '_' {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())
        } else if rest.starts_with("::") {
            2
        } else {
            c.len_utf8()
        };
        if !c.is_whitespace() {
            tokens.push(&rest[..len]);
        }
        rest = &rest[len..];
    }
    let mut names: Vec<String> = Vec::new();
    let mut in_use = false;
    for (i, &token) in tokens.iter().enumerate() {
        let previous = i.checked_sub(1).map_or("", |i| tokens[i]);
        let next = tokens.get(i + 1).copied().unwrap_or("");
        match token {
            "use" => in_use = true,
            ";" => in_use = false,
            _ => {}
        }
        let is_name = token.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && !matches!(token, "crate" | "self" | "super" | "use" | "mod" | "pub" | "as");
        let root = next == "::" && previous != "::";
        let imported = in_use && matches!(next, ";" | "," | "}") && (previous == "::" || previous == "as");
        if is_name && (root || imported || previous == "mod") && !names.iter().any(|n| n == token) {
            names.push(token.to_string());
        }
    }
    names
}

/// The one error shape: `invalid <what> "<value>": <rule> (e.g. <example>)`, the value quoted
/// by [`quote`].
fn invalid(what: &str, value: &str, rule: impl fmt::Display, example: &str) -> anyhow::Error {
    anyhow!("invalid {what} {}: {rule} (e.g. {example})", quote(value))
}

/// `value` in double quotes, as a message shows a name it refuses: printable ASCII as it is,
/// and every other character escaped as Rust writes it (`\n`, `\"`, `\u{41c}`), so that what
/// looks valid but is not (a Cyrillic `М` in `Мemcached`, a zero-width joiner, a right-to-left
/// override) shows why it was refused, and a message is always one line of plain text.
pub fn quote(value: &str) -> String {
    use fmt::Write as _;
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\0' => quoted.push_str("\\0"),
            ' '..='~' => quoted.push(c),
            _ => {
                let _ = write!(quoted, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    quoted.push('"');
    quoted
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (RFC 1123 label), or `[a-z]…` (RFC 1035) when `letter_first`.
/// Length is checked by the callers, so they can say which limit applies.
fn is_label(s: &str, letter_first: bool) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (s.as_bytes().first(), s.as_bytes().last()) {
        (Some(first), Some(last)) => {
            (first.is_ascii_lowercase() || (!letter_first && alnum(first)))
                && alnum(last)
                && s.bytes().all(|c| alnum(&c) || c == b'-')
        }
        _ => false,
    }
}

/// Kubernetes' `IsDNS1123Subdomain`, plus DNS's limit of 63 characters per label: `None` when
/// `s` is one, else the broken rule, phrased about `subject`.
fn subdomain_problem(s: &str, subject: &str) -> Option<String> {
    if !s.split('.').all(|label| is_label(label, false)) {
        Some(format!(
            "{subject} must be a lowercase RFC 1123 subdomain: labels of a-z, 0-9 and '-', \
             separated by '.', each starting and ending with a letter or digit"
        ))
    } else if s.len() > SUBDOMAIN_MAX {
        let n = s.len();
        Some(format!("{subject} must be at most {SUBDOMAIN_MAX} characters (it has {n})"))
    } else {
        let label = s.split('.').find(|label| label.len() > LABEL_MAX)?;
        Some(format!(
            "each '.'-separated label of {subject} must be at most {LABEL_MAX} characters \
             ({} has {})",
            quote(label),
            label.len()
        ))
    }
}

/// `--controller-name`: another controller of a kind (kubebuilder's flag, and its rule: an RFC
/// 1035 label), named so in logs and metrics, in its module `src/controller/<module>.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerName(String);

impl ControllerName {
    pub fn parse(s: &str) -> Result<Self> {
        let example = "\"memcached-audit\"";
        if !is_label(s, true) {
            return Err(invalid(
                "--controller-name",
                s,
                "a controller name must be a lowercase RFC 1035 label: a-z, 0-9 and '-', starting with a letter \
                 and ending with a letter or digit",
                example,
            ));
        }
        if s.len() > LABEL_MAX {
            let rule = format!("a controller name must be at most {LABEL_MAX} characters (it has {})", s.len());
            return Err(invalid("--controller-name", s, rule, example));
        }
        let module = s.replace('-', "_");
        if RUST_KEYWORDS.contains(&module.as_str()) || RESERVED_CRATES.contains(&module.as_str()) {
            let rule = format!("its module {module} would be a Rust keyword or a crate's name");
            return Err(invalid("--controller-name", s, rule, example));
        }
        Ok(Self(s.to_string()))
    }

    /// Its module and file name: `memcached_audit` (`src/controller/memcached_audit.rs`).
    pub fn module(&self) -> String {
        self.0.replace('-', "_")
    }
}

/// Implements `as_str`, `Display`, `AsRef<str>` for newtypes over a `String`.
macro_rules! string_name {
    ($($t:ident),*) => {$(
        impl $t {
            /// The validated value, exactly as the user gave it.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    )*};
}
string_name!(Domain, ProjectName, Group, Version, Kind, Plural, Image, ControllerName);

/// Implements `FromStr` (for clap's `value_parser!`) through each type's `parse`.
macro_rules! from_str_via_parse {
    ($($t:ident),*) => {$(
        impl FromStr for $t {
            type Err = anyhow::Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::parse(s)
            }
        }
    )*};
}
from_str_via_parse!(Domain, ProjectName, Version, Kind, Plural, Image);
from_str_via_parse!(ContainerPort, RunAsUser, ContainerCommand);

#[cfg(test)]
mod tests {
    use super::plural::pluralize;
    use super::*;
    use std::path::Path;

    #[test]
    fn short_and_port_names() {
        let kind = |k| Kind::parse(k).unwrap();
        assert_eq!(kind("Memcached").short_name().as_deref(), Some("mc"));
        assert_eq!(kind("HealthCheckPolicy").short_name().as_deref(), Some("hcp"));
        assert_eq!(kind("Secret").short_name(), None, "sc is kubectl's storageclasses");
        assert_eq!(kind("Memcached").port_name(), "memcached");
        assert_eq!(kind("VeryLongKindNameForPorts").port_name(), "very-long-kind");
    }

    /// Asserts each whitespace-separated word of `ok` parses and each of `bad` does not.
    fn check<T: fmt::Debug>(parse: impl Fn(&str) -> Result<T>, ok: &str, bad: &str) {
        for s in ok.split_whitespace() {
            assert!(parse(s).is_ok(), "should accept {s:?}: {:?}", parse(s));
        }
        for s in bad.split_whitespace() {
            assert!(parse(s).is_err(), "should reject {s:?}: {:?}", parse(s));
        }
    }

    fn err<T: fmt::Debug>(r: Result<T>) -> String {
        r.unwrap_err().to_string()
    }

    fn domain() -> Domain {
        Domain::parse("example.com").unwrap()
    }

    #[test]
    fn domain_rules() {
        let ok = "example.com my.domain a x-1.io 1a.b2 a.b.c.d";
        let bad = "Example.com -a.com a-.com a..com .a a. a_b.com é.com";
        check(Domain::parse, ok, bad);
        assert_eq!(domain().to_string(), "example.com");
        assert_eq!(
            err(Domain::parse("Example.com")),
            "invalid --domain \"Example.com\": a domain must be a lowercase RFC 1123 subdomain: \
             labels of a-z, 0-9 and '-', separated by '.', each starting and ending with a letter \
             or digit (e.g. \"example.com\")"
        );
        assert!(err(Domain::parse("")).contains("a domain cannot be empty"));
        assert!(Domain::parse(&"a".repeat(63)).is_ok());
        let e = err(Domain::parse(&format!("{}.io", "a".repeat(64))));
        assert!(e.contains("label of a domain must be at most 63 characters"), "{e}");
        let long = vec!["a".repeat(63); 4].join(".");
        assert!(err(Domain::parse(&long)).contains("at most 253 characters (it has 255)"));
    }

    #[test]
    fn project_name_rules() {
        let ok = "memcached-operator a op2 my--op";
        let bad = "1op op- -op My-Op my_op my.op type self test";
        check(ProjectName::parse, ok, bad);
        assert!(err(ProjectName::parse("")).contains("a project name cannot be empty"));
        let p = ProjectName::parse("memcached-operator").unwrap();
        assert_eq!((p.as_str(), p.crate_name().as_str()), ("memcached-operator", "memcached_operator"));
        assert!(ProjectName::parse(&"a".repeat(28)).is_ok());
        assert!(err(ProjectName::parse(&"a".repeat(29))).contains("at most 28 characters (it has 29)"));
        assert!(err(ProjectName::parse("build")).contains("reserved by Cargo"));
        assert!(err(ProjectName::parse("match")).contains("\"match\" is a Rust keyword"));
        let e = err(ProjectName::from_project("My_Operator"));
        assert!(e.starts_with("invalid projectName \"My_Operator\": a project name must be"), "{e}");
        assert!(e.ends_with("(e.g. \"memcached-operator\")"), "{e}");
        assert!(ProjectName::from_project("memcached-operator").is_ok());
        let e = err(ProjectName::parse("My_Operator"));
        assert!(e.starts_with("invalid project name \"My_Operator\": a project name must be"));
        assert!(e.ends_with("(e.g. \"memcached-operator\"); pass --project-name to choose another"));
    }

    #[test]
    fn project_name_from_dir() {
        let p = ProjectName::from_dir(Path::new("/home/me/Memcached-Operator")).unwrap();
        assert_eq!(p.as_str(), "memcached-operator");
        let e = err(ProjectName::from_dir(Path::new("/home/me/My_Operator")));
        assert!(e.contains("\"my_operator\" (the lowercased name of directory"), "{e}");
        assert!(e.contains("pass --project-name"), "{e}");
        assert!(err(ProjectName::from_dir(Path::new("/"))).contains("pass --project-name"));
    }

    #[test]
    fn group_rules() {
        let ok = "cache foo-bar foo.bar apps2";
        let bad = "Cache -cache cache- ca_che a..b 1cache type mod";
        check(|s| Group::parse(s, &domain()), ok, bad);
        let g = Group::parse("cache", &domain()).unwrap();
        assert_eq!(g.qualified(&domain()), "cache.example.com");
        assert_eq!(g.module_name(), "cache");
        for (group, module) in [("foo-bar", "foo_bar"), ("foo.bar", "foo_bar")] {
            assert_eq!(Group::parse(group, &domain()).unwrap().module_name(), module);
        }
        assert_eq!(
            err(Group::parse("Cache", &domain())),
            "invalid --group \"Cache\": \"Cache.example.com\" must be a lowercase RFC 1123 \
             subdomain: labels of a-z, 0-9 and '-', separated by '.', each starting and ending \
             with a letter or digit (e.g. --group cache)"
        );
        assert!(err(Group::parse("", &domain())).contains("a group cannot be empty"));
        assert!(err(Group::parse("1cache", &domain())).contains("start with a letter"));
        assert!(err(Group::parse("type", &domain())).contains("\"type\" is a keyword"));
        assert!(err(Group::parse(&"g".repeat(64), &domain())).contains("at most 63"));
        let long = vec!["g".repeat(60); 4].join(".");
        assert!(err(Group::parse(&long, &domain())).contains("at most 253 characters"));
    }

    #[test]
    fn groups_may_be_named_like_any_crate_src_api_mod_rs_does_not_use() {
        let names = api_module_names();
        for name in ["kube", "k8s_openapi", "memop_runtime", "merge_versions"] {
            assert!(names.iter().any(|n| n == name), "{name} missing from {names:?}");
        }
        for name in
            ["core", "std", "tokio", "serde", "crds", "crate", "self", "api", "TERA", "CustomResourceDefinition"]
        {
            assert!(!names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        // Compiled in a generated project (cargo check --all-targets): none is a path of src/api/mod.rs.
        let ok = "core std alloc proc-macro tokio serde schemars axum tests str u8 crds anyhow";
        check(|s| Group::parse(s, &domain()), ok, "kube k8s-openapi k8s.openapi memop-runtime");
        let e = err(Group::parse("k8s.openapi", &domain()));
        assert!(e.contains("its Rust module name \"k8s_openapi\" is a name src/api/mod.rs already uses"), "{e}");
    }

    /// Every template of `src/api/mod.rs` (the file, and each fragment inserted into it) is one
    /// that [`api_module_names`] scans.
    #[test]
    fn the_templates_of_the_api_module_are_all_scanned() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
        let mut found = Vec::new();
        for scaffold in std::fs::read_dir(&root).unwrap() {
            let api = scaffold.unwrap().path().join("src/api");
            for entry in std::fs::read_dir(&api).into_iter().flatten() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name == "mod.rs.tera" || name.starts_with("mod.rs@") {
                    found.push(std::fs::read_to_string(&path).unwrap());
                }
            }
        }
        assert_eq!(found.len(), API_MODULE_TEMPLATES.len(), "templates of src/api/mod.rs: {found:#?}");
        for text in &found {
            assert!(API_MODULE_TEMPLATES.contains(&text.as_str()), "not in API_MODULE_TEMPLATES: {text}");
        }
    }

    #[test]
    fn names_in_messages_show_what_they_hold() {
        assert_eq!(quote("Memcached"), "\"Memcached\"");
        assert_eq!(quote("\u{41c}emcached"), "\"\\u{41c}emcached\"");
        assert_eq!(quote("a\"b\\c\n\t\0\u{202e}\u{200d} é"), r#""a\"b\\c\n\t\0\u{202e}\u{200d} \u{e9}""#);
        // A Cyrillic М looks like a Latin M; the message shows it is not.
        let e = err(Kind::parse("\u{41c}emcached"));
        assert!(e.starts_with("invalid --kind \"\\u{41c}emcached\": a kind must be PascalCase"), "{e}");
        for e in [
            err(Domain::parse("ex\u{200b}ample.com")),
            err(Group::parse("c\u{430}che", &domain())),
            err(Version::parse("v1\u{3b1}")),
            err(Plural::parse("memcached\u{202e}s")),
            err(ProjectName::parse("op\u{2028}")),
            err(Image::parse("memcached\u{feff}")),
            err(ContainerCommand::parse("sh,\u{202e}x")),
        ] {
            let value = e.split(": ").next().unwrap();
            assert!(value.is_ascii() && value.contains("\\u{"), "{e}");
        }
    }

    #[test]
    fn names_that_make_file_names_too_long_are_refused_at_their_flag() {
        // webhook_in_a.<domain>_a.yaml is the longest file name a domain is in.
        assert_eq!(FILE_NAME_MAX, 213);
        let d193 = format!("{}.{}.{}.{}", "d".repeat(63), "d".repeat(63), "d".repeat(62), "io");
        assert_eq!(d193.len(), 193);
        assert!(Domain::parse(&d193).is_ok());
        let d194 = format!("{}.{}.{}.io", "d".repeat(63), "d".repeat(63), "d".repeat(63));
        let e = err(Domain::parse(&d194));
        assert!(
            e.starts_with(&format!(
                "invalid --domain \"{d194}\": a domain must be at most 193 characters (it has 194)"
            )),
            "{e}"
        );
        assert!(
            e.contains("fit in 213 bytes")
                && e.contains("config/crd/patches/webhook_in_<group>.<domain>_<plural>.yaml 214 bytes"),
            "{e}"
        );
        // With the longest domain, a one-letter group still fits; with example.com, 183 characters.
        assert!(Group::parse("a", &Domain::parse(&d193).unwrap()).is_ok());
        assert!(Group::parse("ab", &Domain::parse(&d193).unwrap()).is_err());
        let g183 = format!("{}.{}.{}", "g".repeat(63), "g".repeat(63), "g".repeat(55));
        assert_eq!(g183.len(), 183);
        assert!(Group::parse(&g183, &domain()).is_ok());
        let g184 = format!("{}.{}.{}", "g".repeat(63), "g".repeat(63), "g".repeat(56));
        let e = err(Group::parse(&g184, &domain()));
        assert!(e.contains("a group must be at most 183 characters with --domain example.com (it has 184)"), "{e}");
        assert!(e.ends_with("(e.g. --group cache)"), "{e}");
        // A group that fits with a short kind can be too long with the API's own.
        let group = Group::parse(&g183, &domain()).unwrap();
        let (v, short, long) =
            (Version::parse("v1").unwrap(), Kind::parse("A").unwrap(), Kind::parse("Memcached").unwrap());
        let plural = |k: &Kind| Plural::for_kind(k).unwrap();
        assert!(check_file_names(&domain(), &group, &v, &short, &Plural::parse("a").unwrap()).is_ok());
        let e = err(check_file_names(&domain(), &group, &v, &long, &plural(&long)));
        assert!(e.starts_with(&format!("invalid --group \"{g183}\": with --kind Memcached (plural memcacheds")), "{e}");
        assert!(e.contains("would have a name of 222 bytes") && e.contains("by 9 characters"), "{e}");
        let cache = Group::parse("cache", &domain()).unwrap();
        assert!(check_file_names(&domain(), &cache, &v, &long, &plural(&long)).is_ok());
    }

    /// Every file name a template makes from an API's names is at most as long as the longest of
    /// [`kubernetes::file_names`], which the limits of `--domain` and `--group` are derived from.
    #[test]
    fn the_longest_file_names_are_known() {
        let (qualified, group, version, kind_snake, kind_lower, plural) =
            ("gggg.ddddddd", "gggg", "v1alpha1", "kind_snake", "kindsnake", "pppppp");
        let group_module = group;
        let longest = kubernetes::file_names(qualified, group, version, kind_snake, kind_lower, plural)
            .map(|(_, name)| name.len())
            .into_iter()
            .max()
            .unwrap();
        let spelled = |placeholder: &str| -> String {
            match placeholder {
                "crd_file" => format!("{qualified}_{plural}"),
                "crd_patch_file" => format!("webhook_in_{qualified}_{plural}"),
                "role_prefix" => format!("{group_module}_{kind_snake}"),
                "sample_file" => format!("{group}_{version}_{kind_lower}"),
                "group_module" => group_module.into(),
                "version" | "spoke" => version.into(),
                "kind_snake" => kind_snake.into(),
                other => panic!("a template path holds __{other}__: add it here and to names::kubernetes::file_names"),
            }
        };
        let mut seen = 0;
        let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("templates")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    stack.push(path);
                }
                let Some(name) = name.strip_suffix(".tera").or(Some(name.as_str())).filter(|n| n.contains("__")) else {
                    continue;
                };
                let name = name.split('@').next().unwrap();
                let mut resolved = String::new();
                let mut parts = name.split("__");
                resolved.push_str(parts.next().unwrap());
                while let (Some(placeholder), Some(after)) = (parts.next(), parts.next()) {
                    resolved.push_str(&spelled(placeholder));
                    resolved.push_str(after);
                }
                let delta = resolved.len();
                // Kinds are short (63 characters at most); only names that hold the group or domain count.
                if name.contains("__crd") || name.contains("__role_prefix") || name.contains("__sample_file") {
                    seen += 1;
                    assert!(delta <= longest, "{name} makes {resolved}, longer than {longest}");
                }
            }
        }
        assert!(seen >= 6, "{seen} templates named after the group");
    }

    #[test]
    fn version_rules() {
        let ok = "v1 v2 v10 v1alpha1 v2beta3 v1beta10 v12alpha34";
        let bad = "1 v v0 v01 v1alpha v1beta0 v1alpha01 V1 v1gamma1 v1-alpha1 foo v1alpha1beta1";
        check(Version::parse, ok, bad);
        assert!(Version::parse("v1alpha1 ").is_err());
        assert_eq!(Version::parse("v1alpha1").unwrap().module_name(), "v1alpha1");
        assert!(
            err(Version::parse("v1alpha"))
                .starts_with("invalid --version \"v1alpha\": a version must look like v1, v1alpha1 or v2beta3")
        );
        assert!(err(Version::parse("")).contains("cannot be empty (e.g. \"v1alpha1\")"));
        assert!(err(Version::parse(&format!("v{}", "9".repeat(63)))).contains("at most 63"));
    }

    #[test]
    fn kind_rules() {
        let ok = "Memcached A HTTPRoute Ec2Instance FirstMate Types";
        let bad = "memcached 1Kind Kind- Mem_cached Mem-cached Kïnd Ki.nd Self Option Type Match";
        check(Kind::parse, ok, bad);
        assert!(Kind::parse("Ki nd").is_err());
        assert_eq!(
            err(Kind::parse("memcached")),
            "invalid --kind \"memcached\": a kind must be PascalCase, starting with an uppercase \
             letter and containing only letters and digits (e.g. \"Memcached\")"
        );
        assert!(err(Kind::parse("")).contains("a kind cannot be empty"));
        assert!(Kind::parse(&"A".repeat(63)).is_ok());
        assert!(err(Kind::parse(&"A".repeat(64))).contains("at most 63 characters (it has 64)"));
        let e = err(Kind::parse("Type"));
        assert!(e.contains("\"type\" is a keyword") && e.contains("\"TypeConfig\""), "{e}");
        assert!(err(Kind::parse("Self")).contains("Self or a Rust prelude name"));
        assert!(err(Kind::parse(&"Ab".repeat(31))).contains("kebab-case form"));
    }

    #[test]
    fn kind_spellings() {
        #[rustfmt::skip]
        let cases = [
            // kind, lower, snake, screaming, kebab
            ("Memcached", "memcached", "memcached", "MEMCACHED", "memcached"),
            ("HealthCheckPolicy", "healthcheckpolicy", "health_check_policy", "HEALTH_CHECK_POLICY",
             "health-check-policy"),
            ("HTTPRoute", "httproute", "http_route", "HTTP_ROUTE", "http-route"),
            ("Ec2Instance", "ec2instance", "ec2_instance", "EC2_INSTANCE", "ec2-instance"),
            ("V1Thing", "v1thing", "v1_thing", "V1_THING", "v1-thing"),
            ("API", "api", "api", "API", "api"),
        ];
        for (kind, lower, snake, screaming, kebab) in cases {
            let k = Kind::parse(kind).unwrap();
            assert_eq!([k.lower(), k.snake(), k.screaming(), k.kebab()], [lower, snake, screaming, kebab]);
        }
    }

    #[test]
    fn plural_rules() {
        let ok = "memcacheds admirales my-things2 a";
        let bad = "Memcacheds 1things things- -things th_ings th.ings";
        check(Plural::parse, ok, bad);
        assert!(err(Plural::parse("")).contains("a plural cannot be empty"));
        assert_eq!(
            err(Plural::parse("Memcacheds")),
            "invalid --plural \"Memcacheds\": a plural must be a lowercase RFC 1035 label: a-z, \
             0-9 and '-', starting with a letter and ending with a letter or digit \
             (e.g. \"memcacheds\")"
        );
        assert!(err(Plural::parse(&"a".repeat(64))).contains("at most 63 characters"));
    }

    #[test]
    fn plural_for_kind() {
        let kind = Kind::parse("HealthCheckPolicy").unwrap();
        let plural = Plural::for_kind(&kind).unwrap();
        assert_eq!(plural.as_str(), "healthcheckpolicies");
        assert!(plural.is_regular_for(&kind));
        assert!(!Plural::parse("healthchecks").unwrap().is_regular_for(&kind));
        // flect's acronym quirk: kubebuilder fails here too.
        let e = err(Plural::for_kind(&Kind::parse("Dns").unwrap()));
        assert!(e.contains("\"dnsDNSes\"") && e.contains("--plural dnses"), "{e}");
        let e = err(Plural::for_kind(&Kind::parse(&"A".repeat(63)).unwrap()));
        assert!(e.contains("pass --plural (e.g. --plural memcacheds)"), "{e}");
    }

    /// Pairs from kubebuilder's docs and flect v1.0.3's own test table (`flect_test.go`),
    /// checked against flect itself; like flect's test, each plural must also map to itself.
    #[test]
    fn pluralize_matches_flect() {
        #[rustfmt::skip]
        let table = [
            ("memcached", "memcacheds"), ("busybox", "busyboxes"), ("wordpress", "wordpresses"),
            ("healthcheckpolicy", "healthcheckpolicies"), ("firstmate", "firstmates"),
            ("policy", "policies"), ("key", "keys"), ("fish", "fish"), ("sheep", "sheep"),
            ("helmswoman", "helmswomen"), ("person", "people"), ("child", "children"),
            ("man", "men"), ("datum", "data"), ("octopus", "octupuses"), ("ox", "oxen"),
            ("box", "boxes"), ("mouse", "mice"), ("spokesman", "spokesmen"),
            ("salesperson", "salespeople"), ("equipment", "equipment"), ("news", "news"),
            ("calf", "calves"), ("dwarf", "dwarfs"), ("knife", "knives"), ("leaf", "leaves"),
            ("safe", "saves"), ("thief", "thieves"), ("beef", "beef"), ("chief", "chiefs"),
            ("archive", "archives"), ("day", "days"), ("hobby", "hobbies"), ("abbey", "abbeys"),
            ("guy", "guys"), ("obsequy", "obsequies"), ("proxy", "proxies"), ("chateau", "chateaux"),
            ("bureau", "bureaus"), ("tetrahedron", "tetrahedra"), ("stadium", "stadiums"),
            ("bacterium", "bacteria"), ("museum", "museums"), ("maximum", "maxima"),
            ("spectrum", "spectra"), ("nebula", "nebulae"), ("antenna", "antennas"),
            ("media", "media"), ("multimedia", "multimedia"), ("switch", "switches"),
            ("headache", "headaches"), ("wish", "wishes"), ("bus", "buses"), ("status", "statuses"),
            ("virus", "viruses"), ("house", "houses"), ("quiz", "quizzes"), ("buzz", "buzzes"),
            ("waltz", "waltzes"), ("prize", "prizes"), ("address", "addresses"),
            ("database", "databases"), ("portfolio", "portfolios"), ("piano", "pianos"),
            ("hello", "hellos"), ("buffalo", "buffaloes"), ("photo", "photos"),
            ("potato", "potatoes"), ("zoo", "zoos"), ("index", "indices"), ("complex", "complexes"),
            ("matrix", "matrices"), ("device", "devices"), ("service", "services"),
            ("axis", "axes"), ("tax", "taxes"), ("ellipsis", "ellipses"), ("analysis", "analyses"),
            ("diagnosis", "diagnoses"), ("synopsis", "synopses"), ("psi", "psis"),
            ("api", "apis"), ("html", "htmls"), ("ssh", "sshs"), ("eia", "eias"),
        ];
        for (singular, plural) in table {
            assert_eq!(pluralize(singular), plural, "pluralize({singular})");
            assert_eq!(pluralize(plural), plural, "pluralize({plural})");
        }
        // Alternatives are recognised as plurals; acronyms ending in S hit flect's quirk.
        assert_eq!(pluralize("indexes"), "indexes");
        assert_eq!(pluralize("octopi"), "octopi");
        assert_eq!(pluralize("https"), "httpsHTTPSes");
        assert_eq!(pluralize(""), "");
    }

    #[test]
    fn image_rules() {
        let ok = "memcached memcached:1.6.26-alpine3.19 docker.io/library/memcached:1.6 \
                  quay.io/example/memcached@sha256:abc123 localhost:5000/op:v1 a/b/c:latest \
                  Registry.Example.com/x ghcr.io/a_b/c-d.e:1_0";
        let bad = "Memcached memcached: memcached:-x a//b /a a/ a@sha256 a@:abc example.com:/x";
        check(Image::parse, ok, bad);
        assert!(Image::parse("memcached\t").is_err());
        assert_eq!(Image::parse("memcached:1.6").unwrap().as_str(), "memcached:1.6");
        let e = err(Image::parse("mem cached"));
        assert!(e.starts_with("invalid --image \"mem cached\": an image cannot contain whitespace"));
        assert!(e.ends_with("(e.g. \"memcached:1.6.26-alpine3.19\")"), "{e}");
        assert!(err(Image::parse("")).contains("an image cannot be empty"));
    }

    #[test]
    fn container_port_rules() {
        let bad = "0 65536 -1 +80 http 8o";
        check(ContainerPort::parse, "1 80 11211 65535", bad);
        assert!(ContainerPort::parse("").is_err() && ContainerPort::parse(" 80").is_err());
        assert_eq!(ContainerPort::parse("11211").unwrap().get(), 11211);
        assert_eq!(ContainerPort::parse("65535").unwrap().to_string(), "65535");
        assert_eq!(
            err(ContainerPort::parse("0")),
            "invalid --image-container-port \"0\": a container port must be a whole number from \
             1 to 65535 (e.g. \"11211\")"
        );
    }

    #[test]
    fn owners_are_one_line() {
        assert!(check_owner("The Memcached Authors").is_ok());
        assert!(check_owner("").is_ok());
        for bad in ["ACME\ncompile_error!(\"x\");", "a\tb", "\u{1b}[31m"] {
            assert!(err(check_owner(bad)).contains("one line of text"), "{bad:?}");
        }
    }

    #[test]
    fn repositories_are_urls() {
        assert_eq!(repository("github.com/example/op").unwrap(), "https://github.com/example/op");
        assert_eq!(
            repository("https://gitlab.example.com/team/op.git").unwrap(),
            "https://gitlab.example.com/team/op.git"
        );
        for bad in ["", "github.com/a b", "github.com/\"x\"", "ftp://x/y", "https://", "a\nb", "github.com/\u{202e}x"] {
            assert!(err(repository(bad)).contains("a repository is a URL"), "{bad:?}");
        }
    }

    #[test]
    fn run_as_user_rules() {
        let bad = "-1 +1 0 2147483648 4294967296 9223372036854775807 root 1.5";
        check(RunAsUser::parse, "1 1001 2147483647", bad);
        assert!(RunAsUser::parse("").is_err());
        assert_eq!(RunAsUser::parse("1001").unwrap().get(), 1001);
        let e = err(RunAsUser::parse("-1"));
        assert!(e.starts_with("invalid --run-as-user \"-1\": a user ID must be a whole number"));
        assert!(e.ends_with("(e.g. \"1001\")"), "{e}");
    }

    #[test]
    fn container_command_rules() {
        let bad = "a,,b a, ,a";
        check(ContainerCommand::parse, "sleep a,b", bad);
        for bad in ["", " ", "a, ,b"] {
            assert!(ContainerCommand::parse(bad).is_err(), "{bad:?}");
        }
        assert!(err(ContainerCommand::parse("")).contains("a command cannot be empty"));
        let c = ContainerCommand::parse("memcached, --memory-limit=64 ,-o,modern,-v").unwrap();
        assert_eq!(c.args(), ["memcached", "--memory-limit=64", "-o", "modern", "-v"]);
        assert_eq!(c.to_string(), "memcached,--memory-limit=64,-o,modern,-v");
        assert_eq!(c.into_vec().len(), 5);
        let e = err(ContainerCommand::parse("memcached,,-v"));
        assert!(e.contains("\"memcached,,-v\"") && e.contains("argument 2 is empty"), "{e}");
        assert!(e.ends_with("(e.g. \"memcached,--memory-limit=64,-o,modern,-v\")"), "{e}");
    }

    #[test]
    fn from_str_works_for_flag_parsing() {
        assert_eq!("Memcached".parse::<Kind>().unwrap().snake(), "memcached");
        assert!("v1alpha".parse::<Version>().is_err());
        assert_eq!("80".parse::<ContainerPort>().unwrap().get(), 80);
    }
}
