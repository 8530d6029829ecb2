//! The comparison that keeps reconciles free of needless writes: what a controller applies is
//! [`stamp`]ed, and [`in_sync`] says whether an object needs it applied again; and the label
//! values derived from names.

use kube::api::Patch;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde_json::Value;

/// `value` as a label value (at most 63 characters of `[A-Za-z0-9._-]`, starting and ending
/// with an alphanumeric one): itself when it is one; otherwise its valid characters, cut to 52,
/// then `-` and 10 hex digits of a hash of the whole value, so that it stays unique and stable.
pub fn label_value(value: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let edge = |c: char| !c.is_ascii_alphanumeric();
    if value.len() <= 63 && value.chars().all(valid) && value.trim_matches(edge) == value {
        return value.to_string();
    }
    let kept: String = value.chars().filter(|&c| valid(c)).take(52).collect();
    let kept = kept.trim_matches(edge);
    let hash = format!("{:010x}", fnv1a(value.as_bytes()) & 0xff_ffff_ffff);
    if kept.is_empty() {
        hash
    } else {
        format!("{kept}-{hash}")
    }
}

/// The 64-bit FNV-1a hash: short, and the same in every build (label values and selectors
/// derived from it must never change; std's hasher makes no such promise).
pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hasher = Fnv1a::default();
    hasher.add(bytes);
    hasher.0
}

/// [`fnv1a`] as a writer: JSON serialized into it (`serde_json::to_writer`) is hashed as its
/// text would be, without the text being made.
pub(super) struct Fnv1a(pub(super) u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn add(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |hash, &byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    }
}

impl std::io::Write for Fnv1a {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.add(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The annotation in which each applied object carries the hash of what was applied.
pub(crate) const APPLIED_HASH: &str = "memop.rs/applied-hash";

/// The annotation in which an applied object carries the [`fingerprint`] of the fields applied
/// to it, when an admission webhook or policy rewrote one of them on the way in: what
/// [`Owned::applied`](super::Owned::applied) keeps in memory, kept for the operator's next process too, which would
/// otherwise take the rewrite for drift and apply again (see [`fingerprint_patch`]). That
/// process believes it only once a dry run of its apply gives the same fields
/// ([`Observed::Claimed`](super::Observed::Claimed)): anyone who may patch the object can write the annotation, and the
/// webhook that rewrote may be gone.
pub(crate) const APPLIED_FINGERPRINT: &str = "memop.rs/applied-fingerprint";

/// `object` with its `memop.rs/applied-hash` annotation: the hash of everything else in it.
pub fn stamp<K: Resource + Serialize>(mut object: K) -> K {
    let hash = hash(&serde_json::to_value(&object).unwrap_or_default());
    object
        .annotations_mut()
        .insert(APPLIED_HASH.to_string(), hash);
    object
}

/// Whether `observed` needs no apply of `desired` (both stamped with [`stamp`]), which keeps
/// reconciles in steady state free of writes while still letting server-side apply prune:
/// - a different hash means the desired object changed (say, a new operator version dropped a
///   field): apply, and the API server removes what is no longer sent;
/// - otherwise it is in sync if it [`contains`] every field we set, or if our fields look
///   exactly as they did right after this process's last apply (`applied`, the [`fingerprint`]
///   of its result), which is what an admission webhook that rewrites one of them leaves.
pub(crate) fn in_sync<K: Resource + Serialize>(
    observed: &K,
    desired: &K,
    applied: Option<u64>,
) -> bool {
    if !same_hash(observed, desired) {
        return false;
    }
    let observed = serde_json::to_value(observed).unwrap_or_default();
    let wanted = serde_json::to_value(desired).unwrap_or_default();
    fields_in_sync(&observed, &wanted, applied)
}

/// Whether `observed` carries the [`APPLIED_HASH`] of `desired`: the first test of [`in_sync`].
pub(crate) fn same_hash<K: Resource>(observed: &K, desired: &K) -> bool {
    observed.annotations().get(APPLIED_HASH) == desired.annotations().get(APPLIED_HASH)
}

/// The rest of [`in_sync`], on the objects as JSON (`observed`, `wanted`): for a caller that
/// needs them as JSON after.
pub(crate) fn fields_in_sync(observed: &Value, wanted: &Value, applied: Option<u64>) -> bool {
    contains(observed, wanted) || applied.is_some_and(|seen| seen == digest(observed, wanted))
}

/// Whether `observed`, stamped as `desired` is, carries in [`APPLIED_FINGERPRINT`] the
/// [`fingerprint`] of its fields: what an earlier process recorded after an apply that admission
/// rewrote (or what anyone who may patch it wrote there): to be checked with a dry run.
pub(crate) fn claims_fingerprint<K: Resource + Serialize>(observed: &K, desired: &K) -> bool {
    observed.annotations().get(APPLIED_HASH) == desired.annotations().get(APPLIED_HASH)
        && observed
            .annotations()
            .get(APPLIED_FINGERPRINT)
            .is_some_and(|claimed| *claimed == fingerprint(observed, desired))
}

/// The merge patch that records in `applied`, what an apply of `desired` returned, the
/// [`fingerprint`] of its fields ([`APPLIED_FINGERPRINT`]), when an admission webhook or policy
/// rewrote one of them; `None` when it [`contains`] every field of `desired`, or already
/// carries that fingerprint. Send it with the field manager of the applies: one more write, once
/// per change of the desired object, spares an apply at every restart of the operator.
pub(crate) fn fingerprint_patch<K: Resource + Serialize>(
    applied: &K,
    desired: &K,
) -> Option<Patch<Value>> {
    let observed = serde_json::to_value(applied).ok()?;
    let wanted = serde_json::to_value(desired).ok()?;
    if contains(&observed, &wanted) {
        return None;
    }
    let fingerprint = hash(&project(&observed, &wanted));
    if applied.annotations().get(APPLIED_FINGERPRINT) == Some(&fingerprint) {
        return None;
    }
    Some(Patch::Merge(serde_json::json!({
        "metadata": { "annotations": { APPLIED_FINGERPRINT: fingerprint } },
    })))
}

/// The hash of the fields of `observed` that `desired` sets: compared by [`in_sync`].
pub(crate) fn fingerprint<K: Serialize>(observed: &K, desired: &K) -> String {
    let observed = serde_json::to_value(observed).unwrap_or_default();
    let wanted = serde_json::to_value(desired).unwrap_or_default();
    hash(&project(&observed, &wanted))
}

/// The shape of `desired`: its objects' keys, every other value null. The parts of an object
/// at the paths `desired` sets ([`project`]) depend on that shape alone, so that a cache can
/// keep, instead of those parts, their [`digest`] under the shape of the last object applied.
pub(crate) fn shape(desired: &Value) -> Value {
    match desired {
        Value::Object(d) => d
            .iter()
            .map(|(k, v)| (k.clone(), shape(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        _ => Value::Null,
    }
}

/// The hash of the parts of `observed` at the paths of `shape` (see [`shape`]): the same as
/// [`fingerprint`] of `observed` and any desired object of that shape, as a number.
pub(crate) fn digest(observed: &Value, shape: &Value) -> u64 {
    let mut hasher = Fnv1a::default();
    hash_projected(&mut hasher, observed, shape);
    hasher.0
}

/// Hashes the text of `project(observed, shape)` into `hasher` as [`project`] and `to_string`
/// would make it, without making either: a digest is taken at every apply and comparison, of
/// objects whose applied parts (a pod template) are most of them.
fn hash_projected(hasher: &mut Fnv1a, observed: &Value, shape: &Value) {
    match (observed, shape) {
        (Value::Object(o), Value::Object(d)) => {
            hasher.add(b"{");
            for (i, (k, v)) in d.iter().enumerate() {
                if i > 0 {
                    hasher.add(b",");
                }
                // Writing to a hasher cannot fail.
                let _ = serde_json::to_writer(&mut *hasher, k);
                hasher.add(b":");
                match o.get(k) {
                    Some(ov) => hash_projected(hasher, ov, v),
                    None => hasher.add(b"null"),
                }
            }
            hasher.add(b"}");
        }
        _ => {
            let _ = serde_json::to_writer(&mut *hasher, observed);
        }
    }
}

/// The parts of `observed` at the paths that `desired` sets (whole lists at list paths).
fn project(observed: &Value, desired: &Value) -> Value {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d
            .iter()
            .map(|(k, v)| (k.clone(), o.get(k).map_or(Value::Null, |ov| project(ov, v))))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        _ => observed.clone(),
    }
}

/// A stable hash of a JSON value, as 16 hex digits.
fn hash(value: &Value) -> String {
    format!("{:016x}", fnv1a(value.to_string().as_bytes()))
}

/// True when every field set in `desired` has the same value in `observed`.
///
/// The API server fills in defaults (a container's `terminationMessagePath`, a port's
/// `protocol`, …), so an object it returns never equals the one we sent; what matters is that
/// everything we asked for is there.
pub(crate) fn contains(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d
            .iter()
            .all(|(k, v)| o.get(k).is_some_and(|ov| contains(ov, v))),
        // A list of objects is usually a map keyed by a field (containers by name, ports by
        // number) that other field managers may add to: each wanted element must be there.
        (Value::Array(o), Value::Array(d)) if d.iter().all(Value::is_object) => {
            d.iter().all(|dv| o.iter().any(|ov| contains(ov, dv)))
        }
        // A list of scalars (a command, capabilities) is atomic: it must be equal.
        (Value::Array(o), Value::Array(d)) => o == d,
        _ => observed == desired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn a_digest_hashes_the_text_of_the_projection() {
        let observed = json!({
            "metadata": { "name": "a", "labels": { "x": "y\"z", "é": "ü" } },
            "spec": { "replicas": 3, "template": { "containers": [{ "name": "c", "image": "i:1" }] } },
            "status": { "ready": true },
        });
        for desired in [
            json!({ "metadata": { "labels": { "x": "", "missing": "" } }, "spec": { "template": {} } }),
            json!({ "spec": { "replicas": 1, "template": { "containers": [] } }, "kind": "" }),
            json!({}),
            json!(null),
        ] {
            let shape = shape(&desired);
            let text = project(&observed, &shape).to_string();
            assert_eq!(digest(&observed, &shape), fnv1a(text.as_bytes()), "{text}");
            assert_eq!(digest(&observed, &desired), digest(&observed, &shape));
        }
    }

    #[test]
    fn contains_ignores_server_defaults_but_not_changes() {
        let desired = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 80}]}});
        let observed = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 80, "protocol": "TCP"}], "paused": false}});
        assert!(contains(&observed, &desired));
        let scaled = json!({"spec": {"replicas": 1, "ports": [{"containerPort": 80}]}});
        assert!(!contains(&scaled, &desired));
        let extra_port = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 81}, {"containerPort": 80}]}});
        assert!(
            contains(&extra_port, &desired),
            "another manager's port is not drift"
        );
        let command = json!({"command": ["memcached", "-v"]});
        assert!(!contains(
            &json!({"command": ["memcached", "-v", "-x"]}),
            &command
        ));
    }

    #[test]
    fn label_values_are_valid_stable_and_distinct() {
        assert_eq!(label_value("memcached-sample"), "memcached-sample");
        let long = "a".repeat(253);
        let value = label_value(&long);
        assert_eq!(value.len(), 63);
        assert_eq!(value, label_value(&long), "stable");
        assert_ne!(value, label_value(&"a".repeat(252)), "distinct");
        assert!(value.starts_with(&"a".repeat(52)));
        for odd in ["_1.6", ".x", "-", "a/b", "1.6_"] {
            let value = label_value(odd);
            assert!(value.len() <= 63, "{value}");
            assert!(
                value.starts_with(|c: char| c.is_ascii_alphanumeric()),
                "{value}"
            );
            assert!(
                value.ends_with(|c: char| c.is_ascii_alphanumeric()),
                "{value}"
            );
        }
        assert_eq!(label_value("_1.6").split('-').next(), Some("1.6"));
    }

    #[test]
    fn in_sync_until_the_desired_object_or_our_fields_change() {
        let object = |data: serde_json::Value| -> ConfigMap {
            serde_json::from_value(json!({ "metadata": { "name": "a" }, "data": data })).unwrap()
        };
        let desired = stamp(object(json!({ "size": "2" })));
        // What the server returns: ours, plus what others (or defaults) added.
        let mut observed = desired.clone();
        observed
            .data
            .as_mut()
            .unwrap()
            .insert("other".into(), "x".into());
        assert!(in_sync(&observed, &desired, None));

        // A new desired object (one field dropped): the hash differs, so apply and prune.
        let newer = stamp(object(json!({})));
        assert!(!in_sync(&observed, &newer, None));

        // Someone changed one of our fields: drift.
        let mut drifted = observed.clone();
        drifted
            .data
            .as_mut()
            .unwrap()
            .insert("size".into(), "5".into());
        assert!(!in_sync(&drifted, &desired, None));
        // ... unless that is how our own last apply came back (an admission webhook's rewrite).
        let applied = fingerprint(&drifted, &desired);
        let digest = u64::from_str_radix(&applied, 16).unwrap();
        assert_eq!(
            digest,
            super::digest(
                &serde_json::to_value(&drifted).unwrap(),
                &shape(&serde_json::to_value(&desired).unwrap())
            ),
            "the digest under the desired object's shape is its fingerprint"
        );
        assert!(in_sync(&drifted, &desired, Some(digest)));
        let mut again = drifted.clone();
        again
            .data
            .as_mut()
            .unwrap()
            .insert("size".into(), "6".into());
        assert!(!in_sync(&again, &desired, Some(digest)));

        // The same, for a process that did not make that apply: the object carries it.
        assert_eq!(
            fingerprint_patch(&observed, &desired),
            None,
            "nothing rewritten"
        );
        let Some(Patch::Merge(patch)) = fingerprint_patch(&drifted, &desired) else {
            panic!("a rewrite to record")
        };
        let mut recorded = drifted.clone();
        let fingerprint = &patch["metadata"]["annotations"][APPLIED_FINGERPRINT];
        recorded.annotations_mut().insert(
            APPLIED_FINGERPRINT.into(),
            fingerprint.as_str().unwrap().into(),
        );
        // A fingerprint on the object is a claim to check, not proof.
        assert!(!in_sync(&recorded, &desired, None));
        assert!(claims_fingerprint(&recorded, &desired));
        assert_eq!(
            fingerprint_patch(&recorded, &desired),
            None,
            "recorded already"
        );
        let mut changed = recorded.clone();
        changed
            .data
            .as_mut()
            .unwrap()
            .insert("size".into(), "6".into());
        assert!(
            !claims_fingerprint(&changed, &desired),
            "a later change is drift"
        );
    }
}
