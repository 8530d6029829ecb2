//! Kinds of another project's: a CustomResourceDefinition the project does not define (another
//! operator's, as cert-manager's `Certificate`), which `create api --external-api-crd FILE`
//! scaffolds a controller over. memop reads the CRD's names, serving versions and scope from the
//! file, keeps the CRD in the project (`config/external-crds/`, which the tests install), and
//! writes the kind's Rust types with kopium, the kube-rs ecosystem's generator, as a library.

use anyhow::{Context as _, Result, bail};
use serde::Deserialize as _;
use serde_json::{Value as Json, json};
use serde_yaml::Value;

use super::{Domain, Group, Kind, Plural, Version};

/// Where a project keeps the CRDs of its external kinds: `<dir>/<group>_<plural>.yaml`.
pub const CRD_DIR: &str = "config/external-crds";

/// The CRD of an external kind, as found in the file given, checked against the flags.
#[derive(Debug, Clone)]
pub struct ExternalCrd {
    /// The CRD's group, `cert-manager.io`.
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// The CRD as the project keeps it: its `apiVersion`, `kind`, `metadata.name` and `spec`.
    /// Another project's labels and annotations (Helm's, say) are not the project's to install.
    crd: Value,
}

/// A short description of a CRD, for messages: `Certificate (cert-manager.io, versions v1)`.
fn describe(crd: &Value) -> String {
    let versions: Vec<&str> = versions(crd).iter().map(|(name, _)| *name).collect();
    format!(
        "{} ({}, versions {})",
        crd["spec"]["names"]["kind"].as_str().unwrap_or("?"),
        crd["spec"]["group"].as_str().unwrap_or("?"),
        versions.join(", ")
    )
}

/// The versions of a CRD, with whether each is served.
fn versions(crd: &Value) -> Vec<(&str, bool)> {
    let list = crd["spec"]["versions"].as_sequence().map(Vec::as_slice).unwrap_or_default();
    list.iter().filter_map(|v| Some((v["name"].as_str()?, v["served"].as_bool().unwrap_or(false)))).collect()
}

/// The names of the external kind `kind` of `group` (`cert-manager.io`) in `version`, as an API
/// of the project holds them, kubebuilder's way of recording an external group:
/// `cert-manager.io` is the group `cert-manager` of the domain `io`.
pub fn names(group: &str, version: &str, kind: &str, plural: &str) -> Result<(Domain, Group, Version, Kind, Plural)> {
    let (name, domain) = group
        .split_once('.')
        .with_context(|| format!("the group {group:?} has no dot, which the API server requires of a CRD's group"))?;
    if !group.split('.').all(|label| super::is_label(label, false)) || group.len() > 253 {
        bail!("the group {group:?} is not a DNS subdomain, which the API server requires of a CRD's group");
    }
    Ok((
        Domain(domain.to_string()),
        Group(name.to_string()),
        Version::parse(version)?,
        Kind::parse(kind)?,
        Plural::parse(plural)?,
    ))
}

impl ExternalCrd {
    /// Finds in `text` (the YAML of `file`, one document or several) the CRD of `group`'s
    /// `kind`, and checks that it serves `version`. Each refusal says what the file holds.
    pub fn find(text: &str, file: &str, group: &str, version: &str, kind: &str) -> Result<Self> {
        let mut crds = Vec::new();
        let mut others = Vec::new();
        for document in serde_yaml::Deserializer::from_str(text) {
            let value = Value::deserialize(document)
                .with_context(|| format!("--external-api-crd {file} is not YAML; pass the CRD's YAML file"))?;
            if value.is_null() {
                continue;
            }
            let api_version = value["apiVersion"].as_str().unwrap_or_default();
            match value["kind"].as_str() {
                Some("CustomResourceDefinition") if api_version == "apiextensions.k8s.io/v1" => crds.push(value),
                Some(other) => others.push(format!("{api_version} {other}")),
                None => others.push("an object without a kind".into()),
            }
        }
        if crds.is_empty() {
            let holds = if others.is_empty() { "nothing".to_string() } else { others.join(", ") };
            bail!(
                "--external-api-crd {file} holds no CustomResourceDefinition (apiextensions.k8s.io/v1), only {holds}; \
                 pass the YAML file of the kind's CRD (as its project publishes it)"
            );
        }
        let matching = crds
            .iter()
            .find(|c| c["spec"]["group"].as_str() == Some(group) && c["spec"]["names"]["kind"].as_str() == Some(kind));
        let Some(crd) = matching else {
            let found: Vec<String> = crds.iter().map(describe).collect();
            let first = &crds[0];
            let (their_group, their_kind) = (
                first["spec"]["group"].as_str().unwrap_or("?"),
                first["spec"]["names"]["kind"].as_str().unwrap_or("?"),
            );
            bail!(
                "--external-api-crd {file} defines {}, not {kind} of group {group}; pass the flags of the kind it \
                 defines (--group {their_group} --kind {their_kind}), or the CRD file of {kind}",
                found.join(", ")
            );
        };
        let served = versions(crd);
        match served.iter().find(|(name, _)| *name == version) {
            Some((_, true)) => {}
            Some((_, false)) => bail!(
                "--version {version}: the CRD of {kind} in {file} has version {version} but does not serve it \
                 (served: false); pass a version it serves ({})",
                served.iter().filter(|(_, s)| *s).map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
            None => bail!(
                "--version {version}: the CRD of {kind} in {file} has no version {version}; it has {} (pass one of \
                 them with --version)",
                served.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        }
        let spec = &crd["spec"];
        let plural = spec["names"]["plural"].as_str().unwrap_or_default().to_string();
        let mut kept = serde_yaml::Mapping::new();
        kept.insert("apiVersion".into(), crd["apiVersion"].clone());
        kept.insert("kind".into(), crd["kind"].clone());
        let mut metadata = serde_yaml::Mapping::new();
        metadata.insert("name".into(), format!("{plural}.{group}").into());
        kept.insert("metadata".into(), metadata.into());
        kept.insert("spec".into(), spec.clone());
        Ok(Self {
            group: group.to_string(),
            kind: kind.to_string(),
            namespaced: spec["scope"].as_str() != Some("Cluster"),
            plural,
            crd: kept.into(),
        })
    }

    /// The CRD the project keeps at `path` for its external `kind` of `group` in `version`, served
    /// as `plural` (PROJECT's, which names the file and the controller's rules), as
    /// `make external-types` and `memop update` read it: a CRD replaced by one of another plural
    /// (another CRD, to the API server) is refused, and so is a cluster-scoped one in a project
    /// made with `--namespaced` (`namespaced_project`), as `create api` refuses them.
    pub fn kept(
        text: &str,
        path: &str,
        (group, version, kind, plural): (&str, &str, &str, &str),
        namespaced_project: bool,
    ) -> Result<Self> {
        let crd = Self::find(text, path, group, version, kind)?;
        if crd.plural != plural {
            bail!(
                "{path} serves {kind} as {}, but PROJECT records it as {plural}, which names that file and the \
                 controller's RULES: to the API server a CRD of another plural is another CRD. Put back a CRD of \
                 {kind} that serves it as {plural} (memop does not rename a kind's CRD)",
                crd.plural
            );
        }
        if namespaced_project && !crd.namespaced {
            bail!(
                "{path} makes {kind} cluster-scoped, and this project was initialized with --namespaced: its \
                 manager's Role, bound in one namespace, cannot grant access to cluster-scoped kinds; put back a \
                 namespaced CRD of {kind}"
            );
        }
        Ok(crd)
    }

    /// The CRD as the project keeps it in [`CRD_DIR`].
    pub fn yaml(&self) -> Result<String> {
        Ok(serde_yaml::to_string(&self.crd)?)
    }

    /// The Rust types of the kind in `version`, as kopium writes them: its `CustomResource`
    /// derive, with the CRD's docs. `source` names the CRD file in the header. (kopium writes
    /// chrono's types only for a `type: date`, which no CRD the API server accepts has.)
    pub fn rust_types(&self, version: &str, source: &str) -> Result<String> {
        let generator = kopium::TypeGenerator::builder().api_version(Some(version.to_string())).emit_docs(true).build();
        let crd = serde_yaml::from_value(self.crd.clone()).context("the CRD does not parse as a CRD")?;
        self.refuse_untypable(version)?;
        let cannot = || format!("kopium cannot write Rust types for {} {version}", self.kind);
        // Whatever else kopium cannot take is refused as such, not as a crash.
        let types = quietly(|| generator.generate_rust_types_for(&crd, None::<&str>))
            .map_err(|panic| anyhow::anyhow!("{}: {panic}; pass a CRD it can type", cannot()))?
            .with_context(cannot)?;
        // kopium's own header names its version; memop's says how to regenerate.
        let body = types.trim_start_matches(|c| c != '#').to_string();
        Ok(format!(
            "// @generated by memop {} with kopium from {source}:\n// the Rust types of {} {version}, another \
             project's kind. `make external-types` writes them\n// again from that file; do not edit.\n\n{body}",
            env!("CARGO_PKG_VERSION"),
            self.kind
        ))
    }

    /// Refuses, naming the property, what kopium cannot type in `version`: a property no Rust
    /// field name can spell (`.`, `@`: kopium panics), and one whose type it names but does not
    /// write (it names the struct of an object property `aB` `…Ab` and the field's type `…AB`):
    /// the types would not compile.
    fn refuse_untypable(&self, version: &str) -> Result<()> {
        let versions = self.crd["spec"]["versions"].as_sequence().map(Vec::as_slice).unwrap_or_default();
        let schema = versions.iter().find(|v| v["name"].as_str() == Some(version)).map(|v| &v["schema"]);
        let Some(schema) = schema.map(|s| &s["openAPIV3Schema"]).filter(|s| !s.is_null()) else { return Ok(()) };
        let schema = serde_yaml::from_value(schema.clone()).context("the CRD's schema does not parse as one")?;
        let config = kopium::Config::default();
        let containers = kopium::analyze(schema, &self.kind, config)
            .with_context(|| format!("kopium cannot read the schema of {} {version}", self.kind))?
            .output();
        let defined: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
        let theirs = format!("the CRD of {} {version}", self.kind);
        // The root (level 0) is not written: kube's derive makes it, of `metadata` and the spec.
        for container in containers.iter().filter(|c| !c.is_enum && c.level > 0) {
            for member in &container.members {
                // kopium's own renaming, one property at a time.
                let mut alone = kopium::Container {
                    name: container.name.clone(),
                    members: vec![kopium::Member { name: member.name.clone(), ..Default::default() }],
                    ..Default::default()
                };
                if quietly(move || alone.rename()).is_err() {
                    bail!(
                        "{theirs} has a property {:?} (a field of {}) that no Rust field name can spell, so kopium \
                         cannot write the kind's types: remove it from the schema in your copy of the CRD (or give \
                         its object x-kubernetes-preserve-unknown-fields: true instead of properties)",
                        member.name,
                        container.name
                    );
                }
                let undefined = member
                    .type_
                    .split(['<', '>', ',', ' '])
                    .filter(|name| !name.is_empty())
                    .find(|name| !KOPIUM_TYPES.contains(name) && !defined.contains(name));
                if let Some(undefined) = undefined {
                    bail!(
                        "{theirs} has a property {:?} (a field of {}) that kopium types as {undefined}, a type it \
                         does not write (kopium spells the types of properties made of one-letter words, as aB, two \
                         ways), so the kind's types would not compile: in your copy of the CRD, give {:?} \
                         x-kubernetes-preserve-unknown-fields: true instead of its properties (its value is then a map \
                         of JSON values), or remove it",
                        member.name,
                        container.name,
                        member.name
                    );
                }
            }
        }
        // Two object properties whose types kopium names alike (`fooBar`, `foo_bar`): it writes the
        // second type with an X, and types both fields as the first (the second's fields lost).
        let used = |name: &str| {
            containers.iter().flat_map(|c| &c.members).any(|m| m.type_.split(['<', '>', ',', ' ']).any(|t| t == name))
        };
        // (kopium writes some types no field uses, as an enum of integers: those are no loss.)
        let typed_as = |alike: &str| -> Vec<String> {
            let members = containers.iter().flat_map(|c| &c.members);
            let typed = members.filter(|m| m.type_.split(['<', '>', ',', ' ']).any(|t| t == alike));
            typed.map(|m| format!("{:?}", m.name)).collect()
        };
        let unused = containers.iter().filter(|c| c.level > 0 && c.name.ends_with('X') && !used(&c.name));
        let lost = unused.map(|c| (c.name.trim_end_matches('X'), typed_as(c.name.trim_end_matches('X'))));
        if let Some((alike, named)) = lost.into_iter().find(|(_, named)| named.len() > 1) {
            bail!(
                "{theirs} has object properties {} whose types kopium names alike ({alike}), and it types them all as \
                 one of them, so the kind's types would lose the others' fields: in your copy of the CRD, give all \
                 but one of them x-kubernetes-preserve-unknown-fields: true instead of their properties (their \
                 values are then maps of JSON values), or remove them",
                named.join(", ")
            );
        }
        Ok(())
    }

    /// An object of the kind in `version` that the API server accepts, from the CRD's schema:
    /// every required field, with its default, its first allowed value or a placeholder of its
    /// type. The tests of its controller create it; `name` is its name.
    pub fn sample(&self, version: &str, name: &str) -> Result<Json> {
        let versions = self.crd["spec"]["versions"].as_sequence().map(Vec::as_slice).unwrap_or_default();
        let schema = versions
            .iter()
            .find(|v| v["name"].as_str() == Some(version))
            .map(|v| &v["schema"]["openAPIV3Schema"])
            .filter(|s| !s.is_null())
            .with_context(|| format!("the CRD of {} has no schema for {version}", self.kind))?;
        let schema: Json = serde_json::to_value(schema)?;
        let mut object = json!({
            "apiVersion": format!("{}/{version}", self.group),
            "kind": self.kind,
            "metadata": { "name": name },
        });
        if let Some(spec) = schema["properties"].get("spec") {
            object["spec"] = fill(spec, "spec", 0, &mut Budget::default())
                .with_context(|| format!("the CRD of {} {version} cannot give a sample object", self.kind))?;
        }
        Ok(object)
    }
}

/// The types kopium's output uses without writing them: Rust's, and those its prelude imports.
const KOPIUM_TYPES: &[&str] = &[
    "String",
    "bool",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "f32",
    "f64",
    "Option",
    "Vec",
    "BTreeMap",
    "HashMap",
    "serde_json::Value",
    "IntOrString",
    "DateTime",
    "Utc",
    "NaiveDate",
    "Condition",
    "ObjectReference",
];

/// `f`'s value, or the message of its panic, with nothing printed (kopium panics where it cannot
/// go on).
fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> std::result::Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(f);
    std::panic::set_hook(hook);
    result.map_err(|payload| {
        let text = payload.downcast_ref::<String>().cloned();
        text.or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "a panic".into())
    })
}

/// How far [`fill`] goes for a sample object: the tests of an external kind's controller hold
/// it as a literal, and another project's CRD is not to make memop (or those tests) grow without
/// bound.
mod bounds {
    /// The longest string (`minLength`).
    pub const TEXT: u64 = 4096;
    /// The longest list (`minItems`).
    pub const ITEMS: u64 = 256;
    /// The deepest nesting of objects and lists.
    pub const DEPTH: usize = 32;
    /// The most values in all, and the most bytes of text in all.
    pub const VALUES: usize = 4096;
    pub const BYTES: usize = 64 << 10;
}

/// What [`fill`] has made so far, against [`bounds`].
#[derive(Default)]
struct Budget {
    values: usize,
    bytes: usize,
}

/// The smallest value `schema` (at `path`, `spec.owner.name`) accepts: its default, else its
/// first allowed value, else, by type, an object of its required fields, a list of its minimum
/// length, a placeholder; refused, naming the field, beyond [`bounds`].
fn fill(schema: &Json, path: &str, depth: usize, budget: &mut Budget) -> Result<Json> {
    let beyond = |what: String| {
        anyhow::anyhow!(
            "the CRD's schema requires {path} to {what}, more than memop writes into the sample object of the \
             generated tests; memop cannot make an object of this kind to test its controller with: pass a CRD \
             whose schema asks for less (in your copy of it)"
        )
    };
    if depth > bounds::DEPTH {
        return Err(beyond(format!("be nested deeper than {} levels", bounds::DEPTH)));
    }
    budget.values += 1;
    if budget.values > bounds::VALUES || budget.bytes > bounds::BYTES {
        return Err(beyond(format!(
            "hold, with the fields before it, more than {} values or {} KiB of text",
            bounds::VALUES,
            bounds::BYTES >> 10
        )));
    }
    let value = if let Some(default) = schema.get("default") {
        default.clone()
    } else if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        first.clone()
    } else if schema["x-kubernetes-int-or-string"] == true {
        json!(1)
    } else {
        match schema["type"].as_str() {
            Some("object") => {
                let required = schema["required"].as_array().map(Vec::as_slice).unwrap_or_default();
                let mut fields = serde_json::Map::new();
                for field in required.iter().filter_map(Json::as_str) {
                    let at = format!("{path}.{field}");
                    fields.insert(field.to_string(), fill(&schema["properties"][field], &at, depth + 1, budget)?);
                }
                Json::Object(fields)
            }
            Some("array") => {
                let length = schema["minItems"].as_u64().unwrap_or(0);
                if length > bounds::ITEMS {
                    return Err(beyond(format!("hold at least {length} items (minItems {length})")));
                }
                let items = (0..length).map(|i| fill(&schema["items"], &format!("{path}[{i}]"), depth + 1, budget));
                Json::Array(items.collect::<Result<_>>()?)
            }
            Some("integer") | Some("number") => {
                json!(schema["minimum"].as_f64().map_or(1, |m| m.max(1.0) as i64))
            }
            Some("boolean") => json!(false),
            Some("string") => match schema["format"].as_str() {
                Some("date-time") => json!("2026-01-01T00:00:00Z"),
                Some("date") => json!("2026-01-01"),
                _ => {
                    let min = schema["minLength"].as_u64().unwrap_or(0);
                    if min > bounds::TEXT {
                        return Err(beyond(format!("be at least {min} characters long (minLength {min})")));
                    }
                    // "example", cut to maxLength, at least minLength long.
                    let max = schema["maxLength"].as_u64().unwrap_or(u64::MAX);
                    let length = 7.min(max).max(min) as usize;
                    budget.bytes += length;
                    json!("example".chars().cycle().take(length).collect::<String>())
                }
            },
            _ => json!({}),
        }
    };
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CRD of the shape other projects publish, with a required nested field and a date-time.
    const WIDGET: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.toys.example.org
  labels:
    app: '{{ template \"toys.name\" . }}'
spec:
  group: toys.example.org
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: false
    storage: false
    schema: {openAPIV3Schema: {type: object}}
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [color, owner]
            properties:
              color: {type: string, enum: [red, blue]}
              size: {type: integer, minimum: 3}
              owner:
                type: object
                required: [name]
                properties: {name: {type: string}}
          status:
            type: object
            properties:
              builtAt: {type: string, format: date-time}
";

    #[test]
    fn the_crd_is_kept_without_its_projects_metadata() {
        let crd = ExternalCrd::find(WIDGET, "w.yaml", "toys.example.org", "v1", "Widget").unwrap();
        assert_eq!((crd.plural.as_str(), crd.namespaced), ("widgets", true));
        let yaml = crd.yaml().unwrap();
        assert!(yaml.starts_with("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"), "{yaml}");
        assert!(!yaml.contains("labels") && yaml.contains("name: widgets.toys.example.org"), "{yaml}");
        let again = ExternalCrd::find(&yaml, "w.yaml", "toys.example.org", "v1", "Widget").unwrap();
        assert_eq!(again.yaml().unwrap(), yaml, "keeping a kept CRD changes nothing");
    }

    #[test]
    fn refusals_say_what_the_file_holds() {
        let refusal = |text: &str, group: &str, version: &str, kind: &str| {
            format!("{:#}", ExternalCrd::find(text, "w.yaml", group, version, kind).unwrap_err())
        };
        let e = refusal("apiVersion: v1\nkind: ConfigMap\n", "toys.example.org", "v1", "Widget");
        assert!(e.contains("holds no CustomResourceDefinition") && e.contains("v1 ConfigMap"), "{e}");
        let e = refusal(WIDGET, "toys.example.com", "v1", "Widget");
        assert!(e.contains("defines Widget (toys.example.org, versions v1beta1, v1)"), "{e}");
        assert!(e.contains("--group toys.example.org --kind Widget"), "{e}");
        let e = refusal(WIDGET, "toys.example.org", "v1", "Gadget");
        assert!(e.contains("not Gadget of group toys.example.org"), "{e}");
        let e = refusal(WIDGET, "toys.example.org", "v1beta1", "Widget");
        assert!(e.contains("does not serve it") && e.contains("(v1)"), "{e}");
        let e = refusal(WIDGET, "toys.example.org", "v2", "Widget");
        assert!(e.contains("has no version v2"), "{e}");
        let e = refusal("a: [", "toys.example.org", "v1", "Widget");
        assert!(e.contains("is not YAML"), "{e}");
    }

    #[test]
    fn kopium_writes_the_types() {
        let crd = ExternalCrd::find(WIDGET, "w.yaml", "toys.example.org", "v1", "Widget").unwrap();
        let types = crd.rust_types("v1", "config/external-crds/toys.example.org_widgets.yaml").unwrap();
        assert!(types.starts_with("// @generated by memop"), "{types}");
        assert!(types.contains(r#"#[kube(group = "toys.example.org", version = "v1", kind = "Widget""#), "{types}");
        assert!(types.contains("pub struct WidgetSpec") && types.contains("pub color: WidgetColor"), "{types}");
        assert!(!types.contains("kopium version"), "{types}");
    }

    /// Shapes real CRDs have (cert-manager's, Gateway API's): the root's own `metadata`,
    /// `apiVersion` and `kind` (types kopium leaves to kube's derive), an enum of integers (a type
    /// kopium writes and no field uses), and two alike objects of identical fields (one type).
    #[test]
    fn kopium_types_the_shapes_of_real_crds_without_a_refusal() {
        let crd = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.toys.example.org}
spec:
  group: toys.example.org
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              redirect: {type: object, properties: {statusCode: {type: integer, enum: [301, 302]}}}
              fooBar: {type: object, properties: {a: {type: string}}}
              foo_bar: {type: object, properties: {a: {type: string}}}
              podIP: {type: object, properties: {vCPU: {type: string}}}
";
        let crd = ExternalCrd::find(crd, "w.yaml", "toys.example.org", "v1", "Widget").unwrap();
        let types = crd.rust_types("v1", "w.yaml").unwrap();
        assert!(types.contains("pub foo_bar_x: Option<WidgetFooBar>") && types.contains("pub pod_ip:"), "{types}");
    }

    #[test]
    fn the_sample_has_every_required_field() {
        let crd = ExternalCrd::find(WIDGET, "w.yaml", "toys.example.org", "v1", "Widget").unwrap();
        let sample = crd.sample("v1", "widget-sample").unwrap();
        assert_eq!(sample["apiVersion"], "toys.example.org/v1");
        assert_eq!(sample["spec"], json!({"color": "red", "owner": {"name": "example"}}));
    }
}
