//! A tool that is a Python package (`artifact: {python: ...}`) is built for
//! one Debian suite's python3 and C libraries: the lab's guest must be that
//! suite, and the suite's python3 one the release supports. Both are known
//! before anything is built, so `check` says it.

use crate::error::Problem;
use crate::schema::Lab;
use labrun_artifact::{ArtifactSource, BuildRecipe};

impl Lab {
    pub(crate) fn validate_python_suites(&self, out: &mut Vec<Problem>) {
        let guest = self.vm.clone().unwrap_or_default().image;
        for (i, tool) in self.tools.iter().enumerate() {
            let ArtifactSource::Build(BuildRecipe::Python(p)) = &tool.artifact.source else {
                continue;
            };
            if tool.install.is_some() {
                out.push(Problem::new(
                    format!("tools[{i}].install"),
                    format!(
                        "a Python package runs as its venv's entry point ({}): remove `install:`",
                        tool.install_path()
                    ),
                ));
            }
            let at = format!("tools[{i}].artifact.python.suite");
            if let Some(why) = p.suite_problem() {
                out.push(Problem::new(at.clone(), why));
            }
            match guest.suite() {
                Some(suite) if suite == p.suite => {}
                Some(suite) => out.push(Problem::new(
                    at.clone(),
                    format!(
                        "the wheels are built for Debian {}'s python3, but the lab's guest is \
                         Debian {suite} (`vm.image`): write `suite: {suite}`, or make the guest \
                         `image: {{debian: {}}}`",
                        p.suite, p.suite
                    ),
                )),
                None => out.push(Problem::new(
                    at.clone(),
                    "a Python package is built for a Debian suite's python3, and a cloud image's \
                     Python is not known: use labrun's Debian image (`image: {debian: SUITE}`)",
                )),
            }
        }
    }
}
