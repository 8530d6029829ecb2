//! The Helm plugin (`memop edit --plugins=helm/v2-alpha`, see [`super::edit`]): a Helm chart of
//! the project in `<output-dir>/chart`, kubebuilder's plugin under its name. PROJECT records it,
//! and the frame's plugin chain renders the chart again after every command.
//!
//! The chart's objects are rendered from what `config/` is rendered from (PROJECT, the manager
//! role's rules, the CRDs of `config/crd/bases`, the webhook configurations of
//! `config/webhook/manifests.yaml`), so that with the default values `helm template` gives the
//! objects of `kubectl kustomize config/default`.
//!
//! Whose file is whose: the chart's templates (`templates/`, `values.schema.json`,
//! `.helmignore`) are memop's, regenerated and merged three ways with your edits by the engine of
//! `memop update`; `Chart.yaml` and `values.yaml` are written once and then yours (memop only adds
//! the operand image of a new kind at the marker line of `values.yaml`); other files you add to
//! the chart are never touched. `--force` writes every file of the chart as memop makes it.

use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use super::context::ProjectContext;
use crate::project::Project;
use crate::scaffold::merge::Decision;
use crate::scaffold::router::{Merged, Router};
use crate::scaffold::{self, Declared, Entry, Plan, Purpose, Templates, image_env};
use crate::sum::Sum;

/// The chart's directory under `--output-dir`, as kubebuilder names it.
pub(super) const CHART: &str = "chart";
/// The file of the chart that memop extends with the operand image of each new kind.
const VALUES: &str = "values.yaml";
/// Its marker line.
const OPERAND_IMAGES: &str = "operand-images";

/// Where to see memop's text of a chart file it could not merge.
pub(crate) const FRESH_CHART: &str = "`memop edit --plugins=helm/v2-alpha --force` in a copy of the project";

/// Plans the chart of a project whose PROJECT records the Helm plugin (nothing otherwise): memop's
/// files merged with the user's edits, `Chart.yaml` and `values.yaml` created once (`force`:
/// every file replaced). Reads the project's CRDs and manager role from `plan`, so a command that
/// changes them first gets a chart that has the changes.
pub(crate) fn plan_chart(project: &Project, plan: &mut Plan, force: bool) -> Result<Merged> {
    let Some(helm) = &project.plugins.helm else { return Ok(Merged::default()) };
    let chart = format!("{}/{CHART}", helm.output);
    // A chart whose Chart.yaml memop wrote and the user deleted is gone: not made again in parts.
    let chart_yaml = format!("{chart}/Chart.yaml");
    if !force && plan.record().get(&chart_yaml).is_some() && plan.read(Path::new(&chart_yaml))?.is_none() {
        plan.note(format!(
            "{chart_yaml} is gone, so memop left the Helm chart alone; make it again with `memop edit \
             --plugins=helm/v2-alpha --force`"
        ));
        return Ok(Merged::default());
    }
    let templates = Templates::load(&["helm", "helm-kind", "helm-webhook"])?;
    let ctx = chart_context(project)?;
    let mut contexts = vec![("helm", ctx.clone())];
    contexts.extend(kind_contexts(project, plan, &ctx)?);
    contexts.extend(webhook_context(project, plan, &ctx)?);
    // The chart's files: which the project has (memop's others go), then their text.
    let mut entries = Vec::new();
    for (at, (root, ctx)) in contexts.iter().enumerate() {
        for entry in templates.entries(root, ctx)? {
            let Entry::File { template, path, declared } = entry else { continue };
            entries.push((at, template, format!("{chart}/{path}"), declared));
        }
    }
    let gone = no_longer_rendered(plan.record(), &chart, entries.iter().map(|(_, _, path, _)| path.as_str()));
    // Every template sees the manager role's rules as `config/rbac/role.yaml` has them now.
    let rules = scaffold::generated::manager_rules(plan, &ctx)?;
    contexts.iter_mut().for_each(|(_, ctx)| ctx.insert("rules", &rules));
    let mut files: Vec<(String, String, Declared)> = Vec::new();
    for (at, template, path, declared) in entries {
        files.push((path, templates.render(&template, &contexts[at].1)?, declared));
    }
    // Then all of the chart through the rule at once: what goes (a template is neither the role
    // nor a CRD read above), then what is rendered.
    let mut router = Router::new(None);
    for path in gone {
        if router.retire(plan, &path)? == Decision::Keep {
            plan.note(format!(
                "memop no longer writes {path} (the project no longer has what it deployed), and kept it as you \
                 edited it; delete it unless the chart needs it"
            ));
        }
    }
    // The files the chart's templates cannot render without: one the user deleted stays deleted,
    // but is named, as `helm lint` would only say that a value or template is missing.
    for needed in [format!("{chart}/{VALUES}"), format!("{chart}/templates/_helpers.tpl")] {
        if !force && plan.record().get(&needed).is_some() && plan.read(Path::new(&needed))?.is_none() {
            plan.note(format!(
                "{needed} is gone, and the chart's templates need it (`helm lint` fails without it); memop \
                 leaves it deleted: restore it from version control, or make the chart anew with `memop edit \
                 --plugins=helm/v2-alpha --force`"
            ));
        }
    }
    let purpose = if force { Purpose::Make { force } } else { Purpose::Update };
    let images: Vec<(String, String)> = operand_images(project).into_iter().map(|o| (o.env, o.image)).collect();
    for (path, text, declared) in files {
        let yours = plan.read(Path::new(&path))?.is_some() && !force;
        router.route(plan, purpose, &path, declared, text, true)?;
        // The user's values: memop adds the operand image of a new kind at its marker line.
        if yours && path.ends_with(&format!("/{VALUES}")) {
            image_env::add_to_values(plan, &path, OPERAND_IMAGES, &images)?;
        }
    }
    let merged = router.finish()?;
    Ok(if force { Merged::default() } else { merged })
}

/// The templates of `chart` that memop wrote (`record`) and renders no more (the webhooks' once
/// the project has none, say): to be removed while as memop wrote them; one the user edited is
/// kept, with a note.
fn no_longer_rendered<'a>(record: &Sum, chart: &str, rendered: impl Iterator<Item = &'a str>) -> Vec<String> {
    let rendered: std::collections::BTreeSet<&str> = rendered.collect();
    let templates = format!("{chart}/templates/");
    record.paths().filter(|path| path.starts_with(&templates) && !rendered.contains(path)).map(str::to_string).collect()
}

/// An operand's image, as the manager's environment has it.
#[derive(Debug, Serialize)]
struct OperandImage {
    env: String,
    image: String,
}

/// The operands of the project's controllers, in PROJECT's order (that of the manager's env).
fn operand_images(project: &Project) -> Vec<OperandImage> {
    let mut images: Vec<OperandImage> = Vec::new();
    for resource in project.resources.iter().filter(|r| r.controller) {
        let Some(operand) = &resource.operand else { continue };
        let env = format!("{}_IMAGE", resource.names.kind.screaming());
        if !images.iter().any(|i| i.env == env) {
            images.push(OperandImage { env, image: operand.image.clone() });
        }
    }
    images
}

/// The context of the chart's templates: the project's, with the operands (and, once the chart
/// knows its files, the manager role's rules: see [`plan_chart`]).
fn chart_context(project: &Project) -> Result<tera::Context> {
    let mut ctx = tera::Context::from_serialize(ProjectContext::new(project))?;
    ctx.insert("operands", &operand_images(project));
    ctx.insert("webhooks", &project.resources.iter().any(|r| r.webhooks.is_some()));
    let mut conversion_crds: Vec<String> =
        project.resources.iter().filter(|r| r.converts()).map(|r| r.names.crd_name()).collect();
    conversion_crds.dedup();
    ctx.insert("conversion_crds", &conversion_crds);
    Ok(ctx)
}

/// The context of the webhooks' templates, for a project that has webhooks: the chart's, with
/// the webhook configurations as `config/webhook/manifests.yaml` has them now.
fn webhook_context(
    project: &Project,
    plan: &Plan,
    chart: &tera::Context,
) -> Result<Option<(&'static str, tera::Context)>> {
    if !project.resources.iter().any(|r| r.webhooks.is_some()) {
        return Ok(None);
    }
    let path = "config/webhook/manifests.yaml";
    let Some(manifests) = plan.read(Path::new(path))? else {
        bail!(
            "{path} is missing, and the chart installs the webhook configurations from it; run `make manifests` to \
             write it, then run this command again"
        );
    };
    let mut ctx = chart.clone();
    ctx.insert("webhook_manifests", &webhook_manifests_template(&manifests, &project.project_name));
    Ok(Some(("helm-webhook", ctx)))
}

/// The context of each kind's templates (its CRD, its RBAC helper roles): the chart's, with the
/// kind's names and its CRD as `config/crd/bases` has it now; one per CRD.
fn kind_contexts(project: &Project, plan: &Plan, chart: &tera::Context) -> Result<Vec<(&'static str, tera::Context)>> {
    let mut contexts = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for resource in project.resources.iter().filter(|r| r.api.is_some()) {
        let names = &resource.names;
        if !seen.insert(names.crd_file()) {
            continue; // another version of a kind already listed: one CRD
        }
        let path = format!("config/crd/bases/{}.yaml", names.crd_file());
        let Some(crd) = plan.read(Path::new(&path))? else {
            bail!(
                "{path} is missing, and the chart installs the CRD of {} from it; run `make manifests` to write it, \
                 then run this command again",
                names.kind
            );
        };
        let mut ctx = chart.clone();
        ctx.extend(tera::Context::from_serialize(names)?);
        let converts = project.resources.iter().any(|r| r.converts() && r.names.crd_file() == names.crd_file());
        ctx.insert("crd_yaml", &crd_template(&crd, &project.project_name, converts));
        contexts.push(("helm-kind", ctx));
    }
    Ok(contexts)
}

/// `{{ include "<chart>.resourceName" … }}`: the name of the chart's object `suffix`.
fn resource_name(chart: &str, suffix: &str) -> String {
    format!("{{{{ include \"{chart}.resourceName\" (dict \"suffix\" \"{suffix}\" \"context\" .) }}}}")
}

/// `{{ include "<chart>.namespace" . }}`.
fn namespace(chart: &str) -> String {
    format!("{{{{ include \"{chart}.namespace\" . }}}}")
}

/// The Helm condition of cert-manager's webhook certificate.
const WEBHOOK_CERT_MANAGER: &str = "and .Values.webhook.enabled (eq .Values.webhook.certificates \"certManager\")";

/// The annotation by which cert-manager injects the CA of the webhook certificate.
fn inject_ca(chart: &str) -> String {
    format!("cert-manager.io/inject-ca-from: {}/{}", namespace(chart), resource_name(chart, "serving-cert"))
}

/// A CRD of `config/crd/bases` as a template of chart `chart`: its one document, with the chart's
/// labels, Helm's `helm.sh/resource-policy: keep` annotation under `crd.keep`, and any `{{` of its
/// text (in a description) written as Helm's template of itself. A CRD that `converts` through
/// the chart's webhook gets the conversion config/crd/patches gives it, and cert-manager's CA.
fn crd_template(crd: &str, chart: &str, converts: bool) -> String {
    let labels = format!("    {{{{- include \"{chart}.labels\" . | nindent 4 }}}}");
    // What goes under `annotations:`, and the condition that there is any.
    let mut annotations = vec![
        "    {{- if .Values.crd.keep }}".to_string(),
        "    helm.sh/resource-policy: keep".into(),
        "    {{- end }}".into(),
    ];
    let mut any = ".Values.crd.keep".to_string();
    if converts {
        annotations.extend([
            format!("    {{{{- if {WEBHOOK_CERT_MANAGER} }}}}"),
            format!("    {}", inject_ca(chart)),
            "    {{- end }}".into(),
        ]);
        any = format!("or {any} ({WEBHOOK_CERT_MANAGER})");
    }
    let annotations = annotations.join("\n");
    let mut out = Vec::new();
    let mut section = String::new();
    let (mut labeled, mut annotated) = (false, false);
    let body = crd.lines().skip_while(|l| l.starts_with('#') || l.trim() == "---" || l.trim().is_empty());
    for line in body {
        let line = escape(line);
        let top = !line.starts_with(' ') && !line.is_empty();
        if top && section == "metadata:" {
            // What metadata did not have: Helm's.
            if !labeled {
                out.push(format!("  labels:\n{labels}"));
            }
            if !annotated {
                out.push(format!("  {{{{- if {any} }}}}\n  annotations:\n{annotations}\n  {{{{- end }}}}"));
            }
        }
        if top {
            section = line.clone();
        }
        out.push(line.clone());
        match line.as_str() {
            "  labels:" if section == "metadata:" => {
                out.push(labels.clone());
                labeled = true;
            }
            "  annotations:" if section == "metadata:" => {
                out.push(annotations.clone());
                annotated = true;
            }
            "spec:" if converts => out.push(format!(
                "  {{{{- if .Values.webhook.enabled }}}}\n  conversion:\n    strategy: Webhook\n    webhook:\n      \
                 clientConfig:\n        service:\n          name: {}\n          namespace: {}\n          path: \
                 /convert\n      conversionReviewVersions:\n      - v1\n  {{{{- end }}}}",
                resource_name(chart, "webhook-service"),
                namespace(chart)
            )),
            _ => {}
        }
    }
    out.join("\n")
}

/// `config/webhook/manifests.yaml` (as `make manifests` writes it) as a template of chart
/// `chart`: each configuration named as the chart names its objects, with cert-manager's CA
/// under `webhook.certificates: certManager`, calling the chart's webhook Service; a webhook on a
/// kind of Kubernetes' own skips the release's namespace, where the manager runs.
fn webhook_manifests_template(manifests: &str, chart: &str) -> String {
    let mut out = Vec::new();
    let (mut after_metadata, mut after_values) = (false, false);
    let body = manifests.lines().skip_while(|l| l.starts_with('#') || l.trim() == "---" || l.trim().is_empty());
    for line in body {
        let indent = &line[..line.len() - line.trim_start().len()];
        match line.trim() {
            name if after_metadata && line.starts_with("  name: ") => {
                let name = name.trim_start_matches("name:").trim();
                out.push(format!("  name: {}", resource_name(chart, name)));
                out.push(format!(
                    "  {{{{- if eq .Values.webhook.certificates \"certManager\" }}}}\n  annotations:\n    {}\n  {{{{- end }}}}",
                    inject_ca(chart)
                ));
            }
            "name: webhook-service" => out.push(format!("{indent}name: {}", resource_name(chart, "webhook-service"))),
            "namespace: system" => out.push(format!("{indent}namespace: {}", namespace(chart))),
            // The manager's namespace, which a webhook on a kind of Kubernetes' own skips.
            "- system" if after_values => out.push(format!("{indent}- {}", namespace(chart))),
            _ => out.push(escape(line)),
        }
        after_metadata = line == "metadata:";
        after_values = line.trim() == "values:";
    }
    out.join("\n")
}

/// `line` with each `{{` written as Helm's template of it, so Helm renders it as text.
fn escape(line: &str) -> String {
    line.replace("{{", "{{ \"{{\" }}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_gets_the_keep_annotation_under_its_metadata() {
        let crd = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: \
                   memcacheds.cache.example.com\nspec:\n  group: cache.example.com\n";
        let template = crd_template(crd, "p", false);
        assert!(template.starts_with("apiVersion:"), "{template}");
        assert!(
            template.contains(
                "metadata:\n  name: memcacheds.cache.example.com\n  labels:\n    {{- include \"p.labels\" . | nindent \
                 4 }}\n  {{- if .Values.crd.keep }}\n  annotations:\n    {{- if .Values.crd.keep }}\n    \
                 helm.sh/resource-policy: keep\n    {{- end }}\n  {{- end }}\nspec:"
            ),
            "{template}"
        );
        // Annotations it has already get Helm's beside them.
        let annotated =
            crd_template("metadata:\n  annotations:\n    a: b\n  labels:\n    c: d\n  name: x\nspec: {}\n", "p", false);
        assert!(
            annotated.contains(
                "  annotations:\n    {{- if .Values.crd.keep }}\n    helm.sh/resource-policy: keep\n    {{- end }}\n    a: b"
            ),
            "{annotated}"
        );
        assert_eq!(annotated.matches("annotations:").count(), 1, "{annotated}");
        assert!(
            annotated.contains("  labels:\n    {{- include \"p.labels\" . | nindent 4 }}\n    c: d"),
            "{annotated}"
        );
        assert_eq!(annotated.matches("labels:").count(), 1, "{annotated}");
        // A CRD that converts gets its conversion and, with cert-manager, the CA.
        let converts = crd_template("metadata:\n  name: x\nspec:\n  group: g\n", "p", true);
        assert!(converts.contains("cert-manager.io/inject-ca-from: {{ include \"p.namespace\" . }}/"), "{converts}");
        assert!(
            converts.contains("spec:\n  {{- if .Values.webhook.enabled }}\n  conversion:\n    strategy: Webhook"),
            "{converts}"
        );
        // A description's `{{` stays text for Helm.
        assert!(crd_template("metadata:\n  name: x\nspec:\n  d: a {{ b\n", "p", false).contains("a {{ \"{{\" }} b"));
    }
}
