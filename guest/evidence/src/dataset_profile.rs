//! The shapes the synthetic dataset can take. One type for the lab file, the
//! plan, the agent's `--profile` and the generator, so a name means the same
//! thing everywhere.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetProfile {
    /// SPEC 3's mix (small files, large random and low-entropy files,
    /// duplicates): the published comparison's dataset.
    #[default]
    Published,
    /// Toward a million files of 0-4 KiB in nested folders.
    TinyFiles,
    /// Already-compressed photos and videos.
    Media,
    /// One large sparse disk image, changed in place.
    VmImage,
}

impl DatasetProfile {
    pub const ALL: [DatasetProfile; 4] = [
        DatasetProfile::Published,
        DatasetProfile::TinyFiles,
        DatasetProfile::Media,
        DatasetProfile::VmImage,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DatasetProfile::Published => "published",
            DatasetProfile::TinyFiles => "tiny-files",
            DatasetProfile::Media => "media",
            DatasetProfile::VmImage => "vm-image",
        }
    }

    /// Plans leave the default out, so a published plan reads as before.
    pub fn is_published(&self) -> bool {
        *self == DatasetProfile::Published
    }
}

impl fmt::Display for DatasetProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown profile name, with the names there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = DatasetProfile::ALL.iter().map(|p| p.as_str()).collect();
        write!(
            f,
            "unknown dataset profile `{}`: use one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownProfile {}

impl FromStr for DatasetProfile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<DatasetProfile, UnknownProfile> {
        DatasetProfile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProfile(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_text_and_serde() {
        for p in DatasetProfile::ALL {
            assert_eq!(p.as_str().parse::<DatasetProfile>(), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
            assert_eq!(serde_json::from_str::<DatasetProfile>(&json).unwrap(), p);
        }
        let err = "tiny".parse::<DatasetProfile>().unwrap_err().to_string();
        assert!(
            err.contains("`tiny`") && err.contains("tiny-files, media"),
            "{err}"
        );
    }

    #[test]
    fn plans_without_a_profile_are_published_and_published_plans_name_none() {
        use crate::DatasetPlan;
        let old = r#"{"kind":"synthetic","seed":1,"scale":0.01,"change_seed":2}"#;
        let plan: DatasetPlan = serde_json::from_str(old).unwrap();
        let DatasetPlan::Synthetic { profile, .. } = &plan else {
            panic!("{plan:?}")
        };
        assert_eq!(*profile, DatasetProfile::Published);
        assert_eq!(serde_json::to_string(&plan).unwrap(), old);
        let media =
            r#"{"kind":"synthetic","seed":1,"scale":0.01,"change_seed":2,"profile":"media"}"#;
        let plan: DatasetPlan = serde_json::from_str(media).unwrap();
        assert!(matches!(
            plan,
            DatasetPlan::Synthetic {
                profile: DatasetProfile::Media,
                ..
            }
        ));
        assert_eq!(serde_json::to_string(&plan).unwrap(), media);
        let bad = media.replace("media", "photos");
        let err = serde_json::from_str::<DatasetPlan>(&bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("photos") && err.contains("vm-image"), "{err}");
    }
}
