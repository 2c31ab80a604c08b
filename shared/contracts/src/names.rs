//! The names strum derives agree with the serde names, variant by variant, so that a log line,
//! a metric label and the JSON of the same value always say the same thing.

use serde::Serialize;
use strum::IntoEnumIterator;

use crate::Role;
use crate::domain::{ApprovalSubject, JobStatus, Platform};
use crate::event::Stage;

/// Every variant's strum name is its serde name, and `Display` says the same.
fn assert_names_agree<T>() -> Vec<T>
where
    T: IntoEnumIterator + Serialize + Copy + std::fmt::Debug + Into<&'static str>,
{
    let variants: Vec<T> = T::iter().collect();
    assert!(!variants.is_empty());
    for v in variants.iter().copied() {
        let serde_name = serde_json::to_value(v).expect("serialises");
        let strum_name: &'static str = v.into();
        assert_eq!(serde_name.as_str(), Some(strum_name), "{v:?}");
    }
    variants
}

#[test]
fn stage_names_agree() {
    assert_eq!(assert_names_agree::<Stage>(), Stage::ALL, "ALL lists every stage in order");
    assert!(Stage::ALL.iter().all(|s| s.to_string() == s.as_str()));
}

#[test]
fn role_names_agree() {
    assert_eq!(assert_names_agree::<Role>(), Role::ALL, "ALL lists every role in order");
    assert!(Role::ALL.iter().all(|r| r.to_string() == r.as_str()));
}

#[test]
fn platform_names_agree() {
    assert_eq!(assert_names_agree::<Platform>(), Platform::ALL, "ALL lists every platform in order");
}

#[test]
fn job_status_names_agree() {
    let statuses = assert_names_agree::<JobStatus>();
    assert!(statuses.iter().all(|s| s.to_string() == s.as_str()));
}

#[test]
fn approval_subject_names_agree() {
    // Decision document ids are built from these names: they must never change.
    let subjects = assert_names_agree::<ApprovalSubject>();
    assert_eq!(subjects.iter().map(|s| s.as_str()).collect::<Vec<_>>(), ["strategy", "draft"]);
}

#[test]
fn policy_rule_names_agree() {
    assert_names_agree::<crate::domain::PolicyRule>();
}
