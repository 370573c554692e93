//! Starting and stopping one headless Chromium for a QA run.
//!
//! We spawn the browser ourselves (not `Browser::launch`) so that it leads its own process group:
//! one `killpg` then stops the browser, its zygotes and renderers at once, whatever state they are
//! in, and the full stderr stays available for diagnostics. Flags are passed with their dashes
//! here (our own argv), and the network is closed at three levels (resolver, proxy, WebRTC policy)
//! because no single one covers preconnect, WebSocket and STUN traffic.
//!
//! In a session the browser's group is recorded before Chromium starts (`<session>/qa/browser-
//! <ulid>.pgid`: the group id and the profile folder, see [`crate::process::recorded_group`]), so a
//! coordinator killed mid-QA leaves nothing that `crumb resume` or the next `crumb run` cannot
//! find, kill and clean up ([`reap_recorded`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::Browser;
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::handler::viewport::Viewport;
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::task::JoinHandle;

use super::profile::{PROFILE_ENV, PROFILE_PREFIX, ProfileDir};
use crate::process::group::GroupGuard;
use crate::process::reap;
use crate::process::recorded_group::{self, HeldGroup};

/// Viewport of every page: the size the casual games are designed for.
pub(crate) const VIEWPORT: (u32, u32) = (800, 600);
/// Longest wait for the `DevTools` URL.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(15);
/// Most stderr kept for diagnostics.
const STDERR_CAP: usize = 64 * 1024;

/// The flags every QA browser gets. Exposed so a test can assert they reach the real command line.
pub(crate) fn flags(profile: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless=new",
        "--no-sandbox",
        "--disable-setuid-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--disable-breakpad",
        "--disable-background-timer-throttling",
        "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows",
        "--disable-hang-monitor",
        "--disable-features=Translate,MediaRouter,OptimizationHints",
        "--metrics-recording-only",
        "--mute-audio",
        "--password-store=basic",
        "--use-mock-keychain",
        "--enable-unsafe-swiftshader",
        "--lang=en-US",
        // Network containment: no name resolves except the loopback literal and `*.localhost`
        // (loopback by definition, resolved by Chromium itself: Studio's per-session preview
        // origins), everything else goes to a dead loopback proxy, and WebRTC may not use
        // non-proxied UDP.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE *.localhost",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=127.0.0.1",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--remote-debugging-port=0",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.push(format!("--window-size={},{}", VIEWPORT.0, VIEWPORT.1));
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push("about:blank".to_owned());
    args
}

/// Why the browser could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("could not start {exe}: {source}")]
    Spawn { exe: String, source: std::io::Error },
    #[error("Chromium exited before it was ready: {stderr}")]
    Exited { stderr: String },
    #[error("Chromium did not become ready within {} s: {stderr}", LAUNCH_TIMEOUT.as_secs())]
    Timeout { stderr: String },
    #[error("could not connect to Chromium's DevTools: {0}")]
    Connect(String),
    #[error("could not create a profile folder: {0}")]
    Profile(std::io::Error),
    #[error("could not record the browser's process group: {0}")]
    Record(std::io::Error),
}

/// A running browser. Dropping it kills the whole process group and removes the profile.
pub struct Chromium {
    pub browser: Browser,
    child: Child,
    group: GroupGuard,
    handler: JoinHandle<()>,
    /// Removed when the browser is dropped.
    _profile: ProfileDir,
    /// Where the group is recorded; removed with the browser, after its group is killed.
    _record: recorded_group::RecordGuard,
    pub version: Option<String>,
    /// The tab Chromium opened at start, handed out once: reusing it saves starting a renderer.
    initial_page: Mutex<Option<chromiumoxide::Page>>,
}

impl Chromium {
    /// Start `exe` headless with a fresh profile and connect to it.
    pub async fn launch(exe: &Path) -> Result<Chromium, LaunchError> {
        Self::launch_recorded(exe, None).await
    }

    /// [`Chromium::launch`], with the browser's group recorded in `record_dir` before Chromium
    /// starts (a session's `qa/`), so a reaper can stop it should this process die.
    pub(crate) async fn launch_recorded(
        exe: &Path,
        record_dir: Option<&Path>,
    ) -> Result<Chromium, LaunchError> {
        let profile = ProfileDir::create().map_err(LaunchError::Profile)?;
        let env = [(PROFILE_ENV.into(), profile.path().as_os_str().to_owned())];
        let held = match record_dir {
            None => None,
            Some(dir) => {
                let record = dir.join(format!("browser-{}.pgid", ulid::Ulid::new()));
                let extra = profile.path().to_string_lossy();
                Some(HeldGroup::found(&record, &extra, &env).map_err(LaunchError::Record)?)
            }
        };
        let pgid = held.as_ref().map(HeldGroup::pgid);
        let record = recorded_group::RecordGuard(held.as_ref().map(|h| h.record().to_path_buf()));
        let spawned = crate::process::command::spawned(exe)
            .args(flags(profile.path()))
            .envs(env.iter().map(|(k, v)| (k, v)))
            // Chromium leaves `org.chromium.Chromium.*` folders in its temp folder; inside the
            // profile they go with it, on every path (finish, timeout, a reaped kill).
            .env("TMPDIR", profile.temp())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(pgid.unwrap_or(0))
            .kill_on_drop(true)
            .spawn();
        if let Some(held) = held {
            held.release().await;
        }
        let mut child = spawned.map_err(|source| LaunchError::Spawn {
            exe: exe.display().to_string(),
            source,
        })?;
        let group = GroupGuard::new(
            pgid.and_then(|p| u32::try_from(p).ok())
                .or_else(|| child.id()),
        );
        let stderr = Arc::new(Mutex::new(String::new()));
        let (url_tx, url_rx) = tokio::sync::oneshot::channel::<String>();
        if let Some(pipe) = child.stderr.take() {
            tokio::spawn(drain_stderr(pipe, Arc::clone(&stderr), url_tx));
        }
        let ws_url = match tokio::time::timeout(LAUNCH_TIMEOUT, url_rx).await {
            Ok(Ok(url)) => url,
            Ok(Err(_)) => {
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                return Err(LaunchError::Exited {
                    stderr: tail(&stderr),
                });
            }
            Err(_) => {
                return Err(LaunchError::Timeout {
                    stderr: tail(&stderr),
                });
            }
        };
        let config = HandlerConfig {
            viewport: Some(Viewport {
                width: VIEWPORT.0,
                height: VIEWPORT.1,
                device_scale_factor: Some(1.0),
                ..Viewport::default()
            }),
            request_timeout: Duration::from_secs(5),
            ..HandlerConfig::default()
        };
        let (browser, mut handler) = Browser::connect_with_config(ws_url, config)
            .await
            .map_err(|e| LaunchError::Connect(e.to_string()))?;
        // Keep polling on errors: breaking out would stall every later call (notes §4).
        let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
        // Both are round trips to the browser: ask at once.
        let (version, initial_page) = tokio::join!(
            tokio::time::timeout(Duration::from_secs(3), browser.version()),
            first_page(&browser)
        );
        let version = version.ok().and_then(Result::ok).map(|v| v.product);
        Ok(Chromium {
            browser,
            child,
            group,
            handler,
            _profile: profile,
            _record: record,
            version,
            initial_page: Mutex::new(initial_page),
        })
    }

    /// The tab opened at start, if it is still unclaimed; otherwise a new one.
    pub(crate) async fn page(&self) -> Result<chromiumoxide::Page, String> {
        let initial = self.initial_page.lock().ok().and_then(|mut p| p.take());
        if let Some(page) = initial {
            return Ok(page);
        }
        match tokio::time::timeout(
            Duration::from_secs(10),
            self.browser.new_page("about:blank"),
        )
        .await
        {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(e)) => Err(format!("could not open a page: {e}")),
            Err(_) => Err("opening a page timed out".into()),
        }
    }

    /// The browser's pid, which is also its process group id.
    pub fn pid(&self) -> Option<i32> {
        self.group.pgid()
    }

    /// Whether a process of the group is still running, or is a zombie we have to reap (zombies
    /// that PID 1 will reap do not count).
    fn group_has_live_members(&self) -> bool {
        let me = std::process::id();
        self.group.pgid().is_some_and(|pgid| {
            reap::members_of_group(pgid).into_iter().any(|pid| {
                // A zombie still counts while it is ours to reap (we are its subreaper).
                reap::ProcStat::read(pid).is_some_and(|s| s.state != 'Z' || s.ppid == me)
            })
        })
    }

    /// Stop the browser: SIGKILL to the whole group (the profile is thrown away, so there is
    /// nothing a polite close would save), then reap and clean up. Bounded to a few seconds.
    pub async fn shutdown(mut self) {
        self.group.kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        self.handler.abort();
        // Wait (bounded) until no process of the group is running any more.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        loop {
            reap::reap_chromium_zombies();
            if !self.group_has_live_members() || tokio::time::Instant::now() >= deadline {
                break;
            }
            // SIGKILLed processes go within milliseconds: look again soon.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.group.disarm();
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // Reached on cancellation (timeout, panic): kill synchronously; `profile` removes itself.
        self.handler.abort();
        self.group.kill();
        let _ = self.child.start_kill();
        reap::reap_chromium_zombies();
    }
}

/// Stop the browser group recorded in `record` by a process that died, and remove its profile.
/// Returns whether a live group was killed.
pub(crate) fn reap_recorded(record: &Path) -> bool {
    let profile = recorded_group::recorded_extra(record).map(PathBuf::from);
    let marker = format!(
        "{PROFILE_ENV}={}",
        profile.as_deref().unwrap_or(Path::new("")).display()
    );
    let killed = recorded_group::reap_recorded(record, &marker);
    if let Some(profile) = profile
        && profile
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with(PROFILE_PREFIX))
    {
        let _ = std::fs::remove_dir_all(profile);
    }
    killed
}

/// The `about:blank` tab Chromium opened at start, once the handler has attached to it (bounded).
async fn first_page(browser: &Browser) -> Option<chromiumoxide::Page> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    loop {
        if let Ok(Ok(pages)) =
            tokio::time::timeout(Duration::from_millis(500), browser.pages()).await
            && let Some(page) = pages.into_iter().next()
        {
            return Some(page);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn drain_stderr(
    pipe: tokio::process::ChildStderr,
    buf: Arc<Mutex<String>>,
    url_tx: tokio::sync::oneshot::Sender<String>,
) {
    let mut url_tx = Some(url_tx);
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(at) = line.find("DevTools listening on ")
            && let Some(tx) = url_tx.take()
        {
            let _ = tx.send(
                line[at + "DevTools listening on ".len()..]
                    .trim()
                    .to_owned(),
            );
        }
        if let Ok(mut b) = buf.lock()
            && b.len() < STDERR_CAP
        {
            b.push_str(&line);
            b.push('\n');
        }
    }
}

fn tail(buf: &Arc<Mutex<String>>) -> String {
    let text = buf.lock().map(|b| b.clone()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}
