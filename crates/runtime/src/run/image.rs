//! Image generation in a run: the `generate_image` tool a text primary may call, and imageMaker
//! as the primary itself (no text agent). Both try the imageMaker candidates in turn and save
//! the image under the project through the contained write (no symlink followed at any
//! component), journaled as a file change so `braincode undo` removes it.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use std::collections::BTreeMap;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan};
use braincode_llm::{ErrorKind, GeneratedImage, ImageRequest, ModelClient, ModelError, ToolCall};
use braincode_protocol::{Phase, Record, Role, RunError, WorkerEnd, WorkerPhase, WorkerStart};
use braincode_tools::tool_args::{GenerateImageArgs, ToolArgs};
use braincode_tools::{
    SharedTool, Tool, ToolContext, ToolDefinition, ToolOutput, ToolPermission, ToolRisk,
};
use serde_json::{Value, json};

use crate::agent::{AgentError, AgentSetup, execute_calls};
use crate::approval::PermissionMode;
use crate::run::fallback::{Fallback, StopRule, each_candidate};
use crate::run::primary::{PrimaryAnswer, PrimaryFailure};
use crate::run::state::{AgentIdentity, RunShared};

/// The project directory generated images go to when no path is asked for.
pub(crate) const IMAGES_DIR: &str = "generated-images";

/// Extensions a requested path may keep (the image's own is added otherwise).
const IMAGE_EXTENSIONS: [&str; 4] = ["png", "jpg", "jpeg", "webp"];

/// Whether the run can generate images at all: an image model with its credential in
/// imageMaker's chain.
pub(crate) fn can_generate(shared: &RunShared) -> bool {
    !shared
        .factory
        .image_candidates(shared.brain.policy(Role::ImageMaker))
        .is_empty()
}

/// Tries each imageMaker candidate until one returns an image; `Err` says why none did (each
/// model with what its provider said). Nothing is journaled here: the call's output carries
/// it all, so a replay that serves the output back reproduces the run.
async fn generate(
    shared: &RunShared,
    request: &ImageRequest,
) -> Result<GeneratedImage, GenerateFailure> {
    let selection = shared
        .factory
        .image_candidates(shared.brain.policy(Role::ImageMaker));
    if selection.is_empty() {
        return Err(GenerateFailure::Failed(
            selection.error_message("imageMaker"),
        ));
    }
    let mut reasons = Vec::new();
    let outcome = each_candidate(
        &selection.usable,
        StopRule::SideCall,
        |candidate, _attempt| async move {
            let client = shared
                .factory
                .image_client(&candidate)
                .map_err(AgentError::Model)?;
            tokio::select! {
                generated = client.generate(request) => generated.map_err(AgentError::Model),
                () = shared.cancel.cancelled() => Err(AgentError::Cancelled),
            }
        },
        |failure| reasons.push(failure.brief()),
    )
    .await;
    match outcome {
        Fallback::Done(image) => Ok(image),
        Fallback::Cancelled => Err(GenerateFailure::Cancelled),
        Fallback::Exhausted(_) => Err(GenerateFailure::Failed(format!(
            "no image model made the image: {}",
            reasons.join("; ")
        ))),
    }
}

enum GenerateFailure {
    Cancelled,
    Failed(String),
}

/// Where an image is saved, relative to the project root: the requested path (inside the
/// project, given the image's extension when it has none of an image), or
/// `generated-images/image-<ms>.<ext>` (a free name).
fn target_path(root: &Path, requested: Option<&str>, extension: &str) -> Result<String, String> {
    match requested.map(str::trim).filter(|p| !p.is_empty()) {
        Some(raw) => {
            let resolved = braincode_tools::paths::resolve_inside(root, raw)
                .map_err(|e| format!("cannot save the image at {raw}: {e}"))?;
            let mut relative = resolved.relative;
            if relative.is_empty() || relative.split('/').any(|part| part == ".git") {
                return Err(format!(
                    "cannot save the image at {raw}: not a file path in the project"
                ));
            }
            let has_image_extension = Path::new(&relative)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
            if !has_image_extension {
                relative = format!("{relative}.{extension}");
            }
            Ok(relative)
        }
        None => {
            let stamp = braincode_config::journal::now_ms();
            for attempt in 0..100u32 {
                let name = match attempt {
                    0 => format!("{IMAGES_DIR}/image-{stamp}.{extension}"),
                    n => format!("{IMAGES_DIR}/image-{stamp}-{n}.{extension}"),
                };
                match braincode_sandbox::beneath::stat(root, Path::new(&name)) {
                    Ok(None) => return Ok(name),
                    Ok(Some(_)) => {}
                    Err(error) => return Err(write_refusal(&name, &error)),
                }
            }
            Err(format!("no free image name in {IMAGES_DIR}/"))
        }
    }
}

fn write_refusal(relative: &str, error: &std::io::Error) -> String {
    if braincode_sandbox::beneath::is_link_refusal(error) {
        format!(
            "refused to save {relative}: a component of the path is a symbolic link; images are never written through links"
        )
    } else {
        format!("cannot save {relative}: {error}")
    }
}

/// Saves `image` in the project: its path relative to the root, and whether the file is new
/// at a path the agent loop did not snapshot (`journaled`: the paths the call's arguments
/// name), which the call then reports as created.
async fn save(
    root: &Path,
    requested: Option<&str>,
    image: &GeneratedImage,
    journaled: &[String],
) -> Result<(String, bool), String> {
    let relative = target_path(root, requested, image.mime.extension())?;
    let created = !journaled.contains(&relative);
    if created {
        // Its before state is not journaled: only a new file may be written there.
        match braincode_sandbox::beneath::stat(root, Path::new(&relative)) {
            Ok(None) => {}
            Ok(Some(_)) => {
                return Err(format!(
                    "{relative} already exists; give its full name as the path to replace it"
                ));
            }
            Err(error) => return Err(write_refusal(&relative, &error)),
        }
    }
    let write_root = root.to_path_buf();
    let write_relative = relative.clone();
    let bytes = image.bytes.clone();
    tokio::task::spawn_blocking(move || {
        braincode_sandbox::beneath::write_file(
            &write_root,
            Path::new(&write_relative),
            &bytes,
            0o644,
        )
    })
    .await
    .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())))
    .map_err(|error| write_refusal(&relative, &error))?;
    Ok((relative, created))
}

/// What the model and the person read about a saved image.
fn saved_text(relative: &str, image: &GeneratedImage) -> String {
    let mut text = format!(
        "Generated image saved to {relative} ({}, {} bytes, model {}).",
        image.mime.as_str(),
        image.bytes.len(),
        image.model
    );
    if let Some(revised) = &image.revised_prompt {
        text.push_str(&format!("\nRevised prompt: {revised}"));
    }
    text
}

/// The `generate_image` tool: offered to a text primary when the run may write and imageMaker
/// has an image model.
pub(crate) struct GenerateImageTool {
    definition: ToolDefinition,
    shared: Arc<RunShared>,
}

impl GenerateImageTool {
    /// The tool of one run.
    pub fn new(shared: Arc<RunShared>) -> Self {
        Self {
            definition: ToolDefinition {
                name: GenerateImageArgs::TOOL.into(),
                description: format!(
                    "Generate a new raster image (an icon, illustration, texture, mock-up) with the image model and save it in the project (default {IMAGES_DIR}/image-<ms>.<ext>). Returns the saved path; name it in your answer. Not for describing or editing existing images."
                ),
                parameters: GenerateImageArgs::schema(),
                permission: ToolPermission::Write,
                risk: ToolRisk::Medium,
            },
            shared,
        }
    }
}

#[async_trait]
impl Tool for GenerateImageTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match GenerateImageArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let request = ImageRequest {
            prompt: args.prompt.clone(),
            size: args.size.clone(),
            ..ImageRequest::default()
        };
        let image = match generate(&self.shared, &request).await {
            Ok(image) => image,
            Err(GenerateFailure::Cancelled) => {
                return ToolOutput::error("generate_image: the run was cancelled");
            }
            Err(GenerateFailure::Failed(message)) => {
                return ToolOutput::error(format!("generate_image failed: {message}"));
            }
        };
        // The agent loop journals the path the arguments name (it snapshotted it before the
        // call); another path is reported as created, for the loop to journal too.
        let journaled = match &self.shared.ledger {
            Some(ledger) => ledger.targets(GenerateImageArgs::TOOL, &arguments),
            None => Vec::new(),
        };
        let root = &context.project_root;
        match save(root, args.path.as_deref(), &image, &journaled).await {
            Ok((relative, created)) => {
                let output = ToolOutput::ok(saved_text(&relative, &image)).with_details(json!({
                    "path": relative,
                    "mimeType": image.mime.as_str(),
                    "bytes": image.bytes.len(),
                    "model": image.model,
                    "revisedPrompt": image.revised_prompt,
                }));
                if created {
                    output.with_created_file(relative)
                } else {
                    output
                }
            }
            Err(message) => ToolOutput::error(format!("generate_image: {message}")),
        }
    }
}

/// The prompt imageMaker sends for a request.
fn image_prompt(shared: &RunShared, worker: &RuntimeWorkerPlan) -> String {
    let mut prompt = String::from(
        "Create a raster image asset. Do not draw visible text, letters or watermarks unless the request asks for them.\n\nRequest: ",
    );
    prompt.push_str(shared.routing_text.trim());
    let goal = worker.goal.trim();
    if !goal.is_empty() && goal != shared.routing_text.trim() {
        prompt.push_str("\n\nGuidance: ");
        prompt.push_str(goal);
    }
    prompt
}

/// The call id of imageMaker's one image call as the primary (one per run: replay finds it by
/// this id and the agent session).
const PRIMARY_IMAGE_CALL: &str = "imagemaker-1";

/// A model client that answers nothing: imageMaker as the primary runs no text turn, but its
/// one image call goes through the agent loop's tool execution, which holds a client.
struct NoTextModel;

#[async_trait]
impl ModelClient for NoTextModel {
    async fn stream(
        &self,
        _request: braincode_llm::ChatRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> Result<braincode_llm::ModelStream, ModelError> {
        Err(ModelError::new(
            ErrorKind::Config,
            "imageMaker runs no text turn; its model makes images only",
        ))
    }
}

/// imageMaker as the primary: no text agent. One `generate_image` call, made the way an
/// agent's call is (the gate decides it as a write, the ledger journals the file, a replay
/// serves it back), tries each image candidate; the answer names the saved file.
pub(crate) async fn run_image_primary(
    shared: &Arc<RunShared>,
    plan: &RuntimePlan,
    worker: &RuntimeWorkerPlan,
) -> Result<PrimaryAnswer, PrimaryFailure> {
    let role = worker.role;
    let selection = (shared.factory).image_candidates(shared.brain.policy(Role::ImageMaker));
    let fail = |message: String, kind: &str| {
        shared.sink.record(Record::RunError(RunError {
            error: message.clone(),
            kind: Some(kind.into()),
            attempt: None,
            will_fallback: Some(false),
            duration_ms: None,
            status: None,
        }));
        Err(PrimaryFailure::Failed(message))
    };
    let Some(candidate) = selection.first().cloned() else {
        return fail(
            format!(
                "imageMaker could not generate the image: {}",
                selection.error_message("imageMaker")
            ),
            "config",
        );
    };
    if shared.permission == PermissionMode::ReadOnly {
        return fail(
            "imageMaker cannot save an image in a read-only run; run it again with edits allowed"
                .into(),
            "config",
        );
    }
    let session = format!("{}-1", worker.context_id);
    shared.sink.record(Record::WorkerStart(WorkerStart {
        phase: WorkerPhase::Primary,
        worker: role,
        goal: worker.goal.clone(),
        handoff: None,
        model: Some(candidate.definition.id.clone()),
        agent_session_id: Some(session.clone()),
        attempt: Some(1),
        worktree: None,
    }));
    shared.sink.status(format!(
        "primary {role} generating an image on {}",
        candidate.definition.id
    ));
    let tool: SharedTool = Arc::new(GenerateImageTool::new(shared.clone()));
    let identity = AgentIdentity {
        role,
        phase: Phase::Primary,
        task_id: Some(worker.context_id.as_str()),
        parent_id: Some(plan.brain_context.id.as_str()),
        agent_session_id: session,
        attempt: 1,
    };
    let setup = AgentSetup {
        tools: vec![tool.clone()],
        ..shared.agent_setup(identity, &candidate)
    };
    let services = shared.services(Arc::new(NoTextModel));
    let arguments = json!({"prompt": image_prompt(shared, worker)});
    let call = ToolCall::from_raw(
        PRIMARY_IMAGE_CALL,
        GenerateImageArgs::TOOL,
        arguments.to_string(),
    );
    let tools = BTreeMap::from([(GenerateImageArgs::TOOL, &tool)]);
    let outputs = execute_calls(&setup, &services, &tools, &[call], &shared.cancel).await;
    let output = match outputs {
        Ok(mut outputs) if !outputs.is_empty() => outputs.swap_remove(0),
        Ok(_) => ToolOutput::error("internal error: the image call was not run"),
        Err(AgentError::Cancelled) => return Err(PrimaryFailure::Cancelled),
        Err(error) => ToolOutput::error(error.to_string()),
    };
    if output.is_error {
        return fail(
            format!(
                "imageMaker could not generate the image: {}",
                output.content
            ),
            "image_generation",
        );
    }
    shared.sink.record(Record::WorkerEnd(WorkerEnd {
        phase: WorkerPhase::Primary,
        worker: role,
        result: None,
        attempt: Some(1),
    }));
    Ok(PrimaryAnswer {
        text: output.content,
        model: candidate.definition.id,
        conversation: None,
    })
}
