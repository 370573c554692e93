//! Every diagnostic code `crumb validate` can emit, with its level and its `crumb explain` text.
//!
//! Codes are part of the public interface (CI scripts match on them), so they are declared once
//! here and never built from strings elsewhere. A test checks that every code literal used in
//! the pipeline module is listed in [`ALL`].

/// How bad a diagnostic is. Warnings fail validation only with `--deny-warnings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Error,
    Warning,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

/// A diagnostic code and its documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code {
    pub name: &'static str,
    pub level: Level,
    /// One line: what the code means.
    pub summary: &'static str,
    /// How to fix it.
    pub fix: &'static str,
}

impl Code {
    /// The text `crumb explain` prints for this code (and `crumb lsp` shows on hover).
    pub fn explanation(&self) -> String {
        format!(
            "{} ({})\n\n{}\n\nHow to fix: {}\n",
            self.name,
            self.level.as_str(),
            self.summary,
            self.fix
        )
    }
}

macro_rules! codes {
    ($($ident:ident = $name:literal, $level:ident, $summary:literal, $fix:literal;)*) => {
        $(
            #[doc = $summary]
            pub(crate) const $ident: Code = Code { name: $name, level: Level::$level, summary: $summary, fix: $fix };
        )*
        /// Every code, in the order they are documented.
        pub const ALL: &[Code] = &[$($ident),*];
    };
}

codes! {
    // Pass 1: reading and parsing.
    FILE_UNREADABLE = "crumb::file-unreadable", Error,
        "The file could not be read, or is not a regular file (a FIFO, a device, a folder): refused before reading, so nothing blocks.",
        "Check that the path exists, is readable, and is an ordinary file.";
    FILE_TOO_LARGE = "crumb::file-too-large", Error,
        "The file is larger than the 1 MiB a pipeline or preset may be.",
        "Pipeline files are small declarations; move large content (prompts, data) into templates or artifacts.";
    NOT_UTF8 = "crumb::not-utf8", Error,
        "The file is not valid UTF-8.",
        "Save the file as UTF-8 (without other encodings' byte-order marks).";
    EMPTY_FILE = "crumb::empty-file", Error,
        "The file contains no YAML document.",
        "Write a pipeline (see `crumb schema pipeline`) or remove the file.";
    YAML_SYNTAX = "crumb::yaml-syntax", Error,
        "The file is not valid YAML.",
        "Fix the syntax at the reported position; quote strings that contain `: `, `#` or start with a special character.";
    TAB_INDENTATION = "crumb::tab-indentation", Error,
        "A tab character is used for indentation; YAML allows only spaces.",
        "Replace the tabs with spaces (two per level is the convention).";
    DUPLICATE_KEY = "crumb::duplicate-key", Error,
        "A mapping has the same key twice; only one can be meant.",
        "Remove or rename one of the two keys.";
    DUPLICATE_ROLE = "crumb::duplicate-role", Error,
        "Two roles have the same id.",
        "Role ids must be unique: rename or merge one of them.";
    // Pass 2: shape, checked against schemas/pipeline.schema.json.
    UNKNOWN_KEY = "crumb::unknown-key", Error,
        "A key that this place in the file does not accept (often a typo).",
        "Use one of the accepted keys listed in the message (see `crumb schema pipeline`).";
    MISSING_KEY = "crumb::missing-key", Error,
        "A required key is missing.",
        "Add the key named in the message.";
    WRONG_TYPE = "crumb::wrong-type", Error,
        "A value has the wrong type (e.g. a string where a list is expected).",
        "Write the value in the form the message asks for.";
    INVALID_VALUE = "crumb::invalid-value", Error,
        "A value is not one of the allowed words or is out of range.",
        "Use one of the allowed values listed in the message.";
    // Pass 3: meaning.
    UNSUPPORTED_VERSION = "crumb::unsupported-version", Error,
        "The pipeline declares a format version this crumb does not know.",
        "Set `version: 1`.";
    RESERVED_ROLE_ID = "crumb::reserved-role-id", Error,
        "A role uses an id reserved for a built-in actor (user, system, coordinator, validator).",
        "Rename the role; events from built-in actors must stay distinguishable from roles.";
    UNKNOWN_EVENT_KIND = "crumb::unknown-event-kind", Error,
        "A route, `produces` or `sees` names an event kind that is neither in the transcript vocabulary nor declared under `kinds:`, so no such event can ever be written.",
        "Declare a kind of your own under `kinds:` (e.g. `kinds: { research.note: {} }`), or use one from the vocabulary (`crumb explain <kind>` describes each, e.g. `build`, `judge.score`, `qa.result`); the message suggests the closest.";
    UNKNOWN_ROLE = "crumb::unknown-role", Error,
        "A route spawns, or listens to events from, a role the pipeline does not declare.",
        "Use a role id declared under `roles:` (the message suggests the closest one), or declare the role.";
    PRODUCES_RUNNER_KIND = "crumb::produces-runner-kind", Error,
        "A role's `produces` lists a kind only the runner or a person writes (e.g. `goal`, `qa.result`, `artifact.created`), so the role could never emit it and no turn of it could succeed.",
        "Remove the kind from `produces`; `crumb explain <kind>` says who writes it. Roles report files in the `artifacts` of their own output event.";
    FROM_CANNOT_PRODUCE = "crumb::from-cannot-produce", Error,
        "A route listens for a kind `from` a role that may not write it (not in its `produces`, not a common kind), so the route can never fire.",
        "Add the kind to that role's `produces`, or change `on`/`from`. A role may write its `produces`, `note` and `agent.thought_summary`; the runner writes `agent.wake`/`agent.stop`/`tool.call`/`tool.result` for it.";
    MISSING_TEMPLATE = "crumb::missing-template", Error,
        "A role's prompt template file does not exist.",
        "Template paths are relative to the pipeline file; fix the path or create the template.";
    TEMPLATE_ESCAPES_ROOT = "crumb::template-escapes-root", Error,
        "A template path leads outside the project (the folder holding the pipeline's folder).",
        "Keep templates inside the project, e.g. `../templates/<role>.md.j2`; absolute paths and `..` chains that leave the project are refused.";
    TEMPLATE_SYNTAX = "crumb::template-syntax", Error,
        "A prompt template (or a file it includes) does not compile.",
        "Fix the minijinja syntax at the reported line of the template.";
    UNKNOWN_TEMPLATE_VARIABLE = "crumb::unknown-template-variable", Error,
        "A template reads a variable, or a field of one, that the engine does not provide; rendering would fail (strict undefined).",
        "Use one of: goal, goal_truncated, role{id, produces, description}, pipeline{name, description, roles, pass_at, partial_at, rubric[{id, label, scale, weight, source}]}, session{id, dir, artifacts_dir, transcript_path}, spec{body, acceptance_criteria, ac_predicates[{id, intent, predicate}]}, build{body, artifacts}, qa{exec_exit_code, passed, findings, checks[{id, status, summary, stdout_tail, stderr_tail}]}, verdict{verdict, aggregate, scores, audit}, feedback{text, suggested_change, severity}, outputs{by_kind[kind], by_role[role]} → {kind, from, body, data}, interventions, attempt, inputs.<name>. Fields are checked through loops, indexing, `set`, macros and filters of known result.";
    TEMPLATE_READS_UNSEEN = "crumb::template-reads-unseen", Error,
        "A role's template reads a part of the prompt context its `sees:` keeps out (`spec`, `build`, `qa`, `verdict`, or an `outputs.by_kind` entry of a kind it does not see); that part is absent from the role's context, so rendering would fail (strict undefined).",
        "Add the kind to the role's `sees:`, or guard the read with `{% if <name> is defined %}` (a shared partial read by roles that see different kinds).";
    TEMPLATE_SHAPE_UNKNOWN = "crumb::template-shape-unknown", Warning,
        "A template reads a field off a value whose shape the checker cannot follow (the result of a filter or method it does not know, a macro argument no call passes, a computed key), so that read is checked only when the prompt is rendered.",
        "Read the field off a context variable, a loop over one, a `set` of one, a macro called with one, or a filter whose result is known (`first`, `sort`, `map(attribute=…)`, …).";
    TEMPLATE_RENDER = "crumb::template-render", Error,
        "A prompt template fails when rendered once with every variable present: a runaway loop or `range` (out of fuel), endless recursion (a self-include, a recursive macro), or an include whose name is not a template path.",
        "Bound the loop, remove the self-reference, or include a quoted path relative to the template (`{% include \"_part.md.j2\" %}`); the location is where rendering failed.";
    UNHANDLED_KIND = "crumb::unhandled-kind", Error,
        "A role produces an event kind that no route handles, so the pipeline would stall after it.",
        "Add a route `{ on: <kind>, ... }`, or remove the kind from `produces`.";
    UNREACHABLE_ROUTE = "crumb::unreachable-route", Warning,
        "A route can never fire: earlier routes already match everything it matches (first match wins), or nothing reachable from `goal` writes the event it waits for.",
        "Remove the route, or move it above the route that shadows it and narrow that one; if nothing writes its event, add the kind to the `produces` of a role that is spawned.";
    UNROUTED_VERDICT = "crumb::unrouted-verdict", Error,
        "A verdict × severity combination has no route, so a verifier's verdict could leave the session stuck.",
        "Add `on: verdict` routes until every verdict (PASS, PARTIAL, FAIL, REJECT) × severity (Critical, Important, Minor) is covered; a route without `when` covers all.";
    NO_PATH_TO_DONE = "crumb::no-path-to-done", Error,
        "Starting from the `goal` event, no sequence of routes ever reaches a `done` action.",
        "Make sure `goal` is routed, each spawned role's `produces` kinds are routed, and some route ends with `done:`.";
    ROLE_NEVER_SPAWNED = "crumb::role-never-spawned", Warning,
        "A role is declared but no route that can ever fire spawns it.",
        "Add a route that spawns it on an event that can happen, or remove the role.";
    UNBOUNDED_LOOP = "crumb::unbounded-loop", Error,
        "A cycle of routes can repeat forever: none of its routes has a `max:`, is a verdict route (bounded by `limits.max_verify`) or a spec route (bounded by `limits.max_respec`), and no `await: human` breaks it.",
        "Add `max: <n>` to one route of the named cycle (the session stops with `route_budget:<route>` when it would fire once more), or route the cycle through a verifier's verdict or `await: human`.";
    ROUTE_ACTION = "crumb::route-action", Error,
        "A route must have exactly one action: `spawn`, `join`, `run`, `done` or `await`.",
        "Keep one action per route; split the route in two if you meant both.";
    ROUTE_CONDITION = "crumb::route-condition", Error,
        "A route condition that cannot apply: `when` on a route that is not `on: verdict`, `from` on a verdict route, `with` without `spawn`, or an empty list.",
        "Use `when` only with `on: verdict`, `with` only with `spawn`, and non-empty verdict/severity lists.";
    FAN_OUT = "crumb::fan-out", Error,
        "A fan-out or join that cannot work: a spawn list that is empty or names a role twice, a `join` without `combine` (or `combine` without `join`), a join not on `judge.score`, a quorum of 0 or above the branches, or a join no fan-out of judges feeds.",
        "Spawn distinct roles (`spawn: [judge-a, judge-b]`), then `{ on: judge.score, join: all | any | { quorum: n }, combine: all_pass | majority | mean | min }`.";
    KIND_DECLARATION = "crumb::kind-declaration", Error,
        "A `kinds:` entry is a kind of the engine's fixed core (goal, agent lifecycle, verdict, QA result, person commands, done, runner bookkeeping), a name that is not spelt like a kind (lower-case words joined by `.`, at most 48 bytes) or one in a reserved namespace (`session.`, `agent.`, `user.`, `tool.`, `qa.`, `judge.`), or carries a schema that is not a JSON Schema.",
        "Declare only the artifact kinds your roles exchange (e.g. `research.note: {}`, `outline: { slot: plan }`, `draft: { slot: build }`).";
    RUN_WITHOUT_QA = "crumb::run-without-qa", Error,
        "A route runs QA but the pipeline has no `qa:` block.",
        "Declare `qa:` with its checks, or route the event elsewhere.";
    QA_NEVER_RUN = "crumb::qa-never-run", Error,
        "The pipeline declares `qa:` but no route runs it (`run: qa`): its checks would never run, and `pass_requires_qa` would fail every verdict.",
        "Add a route such as `{ on: build, run: qa }`, or remove the `qa:` block.";
    QA_RESULT_UNHANDLED = "crumb::qa-result-unhandled", Error,
        "A route runs QA but no route handles the `qa.result` event it produces.",
        "Add a route `{ on: qa.result, ... }`.";
    AWAIT_WITHOUT_ANSWER = "crumb::await-without-answer", Error,
        "A route waits for a person (`await: human`) but no route handles `user.approve`, `user.veto` or `user.answer`, so nothing a person says could move the session on.",
        "Add the person's routes, e.g. `{ on: user.approve, done: { outcome: pass, reason: approved } }` and `{ on: user.veto, spawn: <role>, with: feedback }`.";
    BAD_DURATION = "crumb::bad-duration", Error,
        "A duration is malformed or zero.",
        "Write a whole number and a unit: `1500ms`, `30s`, `20m`, `1h`, or chained `1h30m`.";
    BAD_SIZE = "crumb::bad-size", Error,
        "A size is malformed or zero.",
        "Write a whole number and a unit: `B`, `KB`, `MB`, `GB` (powers of 1000) or `KiB`, `MiB`, `GiB` (powers of 1024).";
    BAD_GLOB = "crumb::bad-glob", Error,
        "A glob pattern does not compile.",
        "Globs use `*` (within one folder), `**` (across folders), `?`, `[abc]` and `{a,b}`; close every bracket and brace.";
    DUPLICATE_CHECK_ID = "crumb::duplicate-check-id", Error,
        "Two QA checks have the same id, so their results could not be told apart.",
        "Give each check a unique `id`.";
    CHECK_MISSING_PARAMETER = "crumb::check-missing-parameter", Error,
        "A QA check lacks a parameter it needs to do anything (e.g. an empty `argv`, or a browser check with no `qa.entry`).",
        "Add the parameter named in the message.";
    CHECK_CONTRADICTION = "crumb::check-contradiction", Error,
        "A QA check's parameters contradict each other (e.g. `min_size` above `max_size`).",
        "Make the parameters consistent.";
    LIMIT_ORDER = "crumb::limit-order", Error,
        "A budget's hard limit is below its warning threshold, so the warning could never fire.",
        "Set `warn` below `hard`.";
    ZERO_LIMIT = "crumb::zero-limit", Error,
        "A limit is zero, so the session would stop before doing anything.",
        "Use a positive number.";
    SCORING_THRESHOLDS = "crumb::scoring-thresholds", Error,
        "Scoring thresholds are out of order or outside 0 to the rubric's highest aggregate (30 for the default D1–D6).",
        "Keep `0 <= partial_at <= pass_at <=` Σ weight × scale of the rubric.";
    RUBRIC_DIMENSION = "crumb::rubric-dimension", Error,
        "A rubric dimension is malformed: a duplicate or badly formed id, a scale or weight that is not positive, a cap or discount outside its range, or a D1–D6 slot scaled above 5.",
        "Give each dimension a unique id (D1–D6 hold 0–5; other ids go under `scores.dims`), a positive scale and weight, a cap within the scale and a discount between 0 and 1.";
    RUBRIC_GUARD = "crumb::rubric-guard", Error,
        "A dimension declares a property whose guard `scoring.guards` does not list, or a listed guard applies to no dimension: one of the two would be ignored.",
        "List the guard (`source: qa` → exec_from_qa, `source: rework` → rework_caps_convergence, `ac_failure_cap` → ac_failure_caps_spec_fit, `same_provider_discount` → same_provider_discount), or declare the property on the dimension it should act on.";
    GUARD_NEEDS_QA = "crumb::guard-needs-qa", Error,
        "A listed guard acts on QA evidence (`pass_requires_qa`, `exec_from_qa`, `ac_failure_caps_spec_fit`), but the pipeline declares no `qa:`: it would fail every verdict or do nothing.",
        "Declare `qa:` (and a `run: qa` route), or leave the guard out of `scoring.guards` (omitting `guards:` picks only those that apply).";
    UNKNOWN_ADAPTER = "crumb::unknown-adapter", Error,
        "A preset or fallback names an adapter crumb does not have.",
        "Use one of: mock, claude-code, codex, gemini-cli, command.";
    COMMAND_WITHOUT_ARGV = "crumb::command-without-argv", Error,
        "A role is bound to the `command` adapter but no argv says what program to run.",
        "Write `adapter: { command: [python3, ../agents/<role>.py] }`, or give the argv in a preset, `.crumb/config.yaml` (`command: [...]`) or `--bind <role>=command:'program args'`.";
    INCLUDE_FILE = "crumb::include-file", Error,
        "A file named by `extends:` or `include:` is missing, unreadable, outside the project (the folder holding the pipeline's folder), or not written as a path.",
        "Write paths relative to the file that names them, e.g. `include: [shared/roles.yaml]`, and keep them inside the project.";
    INCLUDE_CYCLE = "crumb::include-cycle", Error,
        "Files include or extend each other in a circle; the message shows the chain.",
        "Break the cycle: move what both files need into a third fragment they both include.";
    FRAGMENT_KEY = "crumb::fragment-key", Error,
        "An included fragment sets a key fragments cannot hold (only roles, kinds, inputs, routes and include); it would be ignored.",
        "Move the key into the pipeline itself, or start from a whole base pipeline with `extends:`.";
    INPUT_DECLARATION = "crumb::input-declaration", Error,
        "An `inputs:` declaration is malformed: a name a template cannot read, `goal` retyped, an enum without values, `values` on a type that is not enum, or a value listed twice.",
        "Name inputs with letters, digits and `_`; declare `goal` only to describe it or default it; give `type: enum` a `values: [..]` list and other types none.";
    INPUT_DEFAULT = "crumb::input-default", Error,
        "An input's `default` is not of its declared type (or not one of an enum's values).",
        "Write a default of the declared type, e.g. `default: 3` for an integer, or remove it to make the input required.";
    COMMAND_PATH = "crumb::command-path", Error,
        "A path in a role's `command` argv does not exist or leads outside the project (the folder holding the pipeline's folder).",
        "Argv elements containing `/` are relative to the pipeline file; keep them inside the project (e.g. `../agents/writer.py`), or use a bare program name looked up on PATH.";
}

/// Adapters a preset or a role's `fallback` may name.
pub(crate) const KNOWN_ADAPTERS: &[&str] =
    &["mock", "claude-code", "codex", "gemini-cli", "command"];

/// The code called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Code> {
    ALL.iter().find(|c| c.name == name)
}
