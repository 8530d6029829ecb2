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
        let types = generator
            .generate_rust_types_for(&crd, None::<&str>)
            .with_context(|| format!("kopium cannot write Rust types for {} {version}", self.kind))?;
        // kopium's own header names its version; memop's says how to regenerate.
        let body = types.trim_start_matches(|c| c != '#').to_string();
        Ok(format!(
            "// @generated by memop {} with kopium from {source}:\n// the Rust types of {} {version}, another \
             project's kind. `make external-types` writes them\n// again from that file; do not edit.\n\n{body}",
            env!("CARGO_PKG_VERSION"),
            self.kind
        ))
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
            object["spec"] = fill(spec);
        }
        Ok(object)
    }
}

/// The smallest value `schema` accepts: its default, else its first allowed value, else, by
/// type, an object of its required fields, a list of its minimum length, a placeholder.
fn fill(schema: &Json) -> Json {
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if schema["x-kubernetes-int-or-string"] == true {
        return json!(1);
    }
    match schema["type"].as_str() {
        Some("object") => {
            let required = schema["required"].as_array().map(Vec::as_slice).unwrap_or_default();
            let fields = required
                .iter()
                .filter_map(Json::as_str)
                .map(|field| (field.to_string(), fill(&schema["properties"][field])))
                .collect();
            Json::Object(fields)
        }
        Some("array") => {
            let length = schema["minItems"].as_u64().unwrap_or(0);
            Json::Array((0..length).map(|_| fill(&schema["items"])).collect())
        }
        Some("integer") | Some("number") => {
            json!(schema["minimum"].as_f64().map_or(1, |m| m.max(1.0) as i64))
        }
        Some("boolean") => json!(false),
        Some("string") => match schema["format"].as_str() {
            Some("date-time") => json!("2026-01-01T00:00:00Z"),
            Some("date") => json!("2026-01-01"),
            _ => {
                let length = schema["minLength"].as_u64().unwrap_or(0).max(7) as usize;
                json!("example".chars().cycle().take(length).collect::<String>())
            }
        },
        _ => json!({}),
    }
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

    #[test]
    fn the_sample_has_every_required_field() {
        let crd = ExternalCrd::find(WIDGET, "w.yaml", "toys.example.org", "v1", "Widget").unwrap();
        let sample = crd.sample("v1", "widget-sample").unwrap();
        assert_eq!(sample["apiVersion"], "toys.example.org/v1");
        assert_eq!(sample["spec"], json!({"color": "red", "owner": {"name": "example"}}));
    }
}
