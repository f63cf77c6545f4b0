//! `labrun image build [--force]` and `labrun image list`.

use crate::context::Context;
use crate::exit;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Build the lab's base image (skipped when cached).
    Build {
        /// Rebuild even when a cached image exists.
        #[arg(long)]
        force: bool,
    },
    /// Show the cached images.
    List,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let (lab, mut cfg) = crate::lab_vm::load(ctx)?;
    let paths = super::up::paths(ctx);
    match args.action {
        Action::Build { force } => {
            let spec = match &cfg.image {
                labrun_vm::ImageSource::Recipe(spec) => spec.clone(),
                labrun_vm::ImageSource::Cloud(_) => {
                    // Nothing to build: fetch and check the pinned image, so
                    // a later `up` finds it in the cache.
                    let mut bar = super::fetch::Bar::default();
                    if let Some(image) =
                        crate::lab_vm::fetch_cloud_image(ctx, &lab, &mut cfg, &mut bar).await?
                    {
                        safe_println!(
                            "cloud image {} verified (sha256 {}); labrun builds nothing for it",
                            image.path.display(),
                            image.sha256
                        );
                    }
                    return Ok(ExitCode::SUCCESS);
                }
            };
            if !force && let Some(img) = labrun_vm::image::cached(&paths.cache_dir, &spec)? {
                safe_println!("image {} is cached at {}", img.digest, img.dir.display());
                return Ok(ExitCode::SUCCESS);
            }
            labrun_vm::preflight::preflight(&cfg, &paths.cache_dir, &paths.state_root, true)?;
            let spinner = super::up::Spinner::new();
            let started = std::time::Instant::now();
            let mut on_line = |l: &str| labrun_vm::UpProgress::image_line(&spinner, l);
            let built = tokio::select! {
                r = labrun_vm::image::build(&paths.cache_dir, &spec, &paths.apt_dir, force, &mut on_line) => r,
                _ = super::up::wait_for_interrupt() => {
                    spinner.finish();
                    safe_eprintln!("labrun: interrupted: the partial build was removed");
                    return Ok(ExitCode::from(exit::INTERRUPTED));
                }
            };
            spinner.finish();
            let img = built?;
            safe_println!(
                "image {} built in {:.0} s at {}",
                img.digest,
                started.elapsed().as_secs_f64(),
                img.dir.display()
            );
        }
        Action::List => {
            let dir = labrun_vm::image::images_dir(&paths.cache_dir);
            let mut found = false;
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let m = e.path().join("image.json");
                if let Ok(text) = std::fs::read_to_string(&m) {
                    found = true;
                    safe_println!("{}  {}", e.path().display(), text.replace('\n', " "));
                }
            }
            if !found {
                safe_println!("no cached image under {}", dir.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
