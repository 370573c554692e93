//! Pass 3's variable check, walked through minijinja's parse tree for one role: every name a
//! template reads is a local (`set`, `for`, `with`, macro arguments, imports) or a variable of
//! that role's context ([`RoleView`]), and every field read off it exists in its shape — through
//! loops (`{% for c in qa.checks %}{{ c.stauts }}`), indexing (`qa.checks[0]`), `set`, macros
//! (checked with the arguments of each call) and the filters whose result shape is known.
//! Included templates are walked in the including scope, as they render. A field read off a
//! value whose shape the checker cannot follow is a warning, never a silent pass.

// Stopgap until split (see the report of issue 27 items 3-4).
#![allow(clippy::match_wildcard_for_single_variants)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use minijinja::machinery::ast::{self, Expr, Stmt};

use crate::pipeline::lexical_path::normalize;
use crate::pipeline::template_types::{TEXT, Ty, loop_fields};
use crate::pipeline::template_variables::{RoleView, Shape};

mod expr;
#[cfg(test)]
mod tests;

/// What is wrong with one read.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Problem {
    /// A name the engine does not provide, or a field its shape lacks (`why`).
    Unknown { name: String, why: Option<String> },
    /// An event-built variable or an `outputs.by_kind` entry the role does not see.
    Unseen { name: String, kinds: Vec<String> },
    /// A field read off a value whose shape the checker cannot follow.
    ShapeUnknown { path: String, why: String },
}

/// One problem at a byte range of a template file (its real path).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finding {
    pub(crate) file: PathBuf,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) problem: Problem,
}

/// Names minijinja itself provides (globals and block-scoped helpers); not engine variables.
const BUILTINS: &[&str] = &[
    "range",
    "dict",
    "namespace",
    "debug",
    "loop",
    "self",
    "super",
    "caller",
    "varargs",
    "kwargs",
];

/// Check the template at `main` (and what it includes, imports or extends) as rendered for one
/// role. `texts` holds every template file read, by real path; `inputs` the declared inputs.
pub(crate) fn check_role(
    main: &Path,
    texts: &BTreeMap<PathBuf, String>,
    view: RoleView<'_>,
    inputs: &[String],
) -> Vec<Finding> {
    let asts: BTreeMap<PathBuf, Stmt<'_>> = texts
        .iter()
        .filter_map(|(path, text)| {
            let parsed = minijinja::machinery::parse(
                text,
                "template",
                minijinja::syntax::SyntaxConfig::default(),
            )
            .ok()?;
            Some((path.clone(), parsed))
        })
        .collect();
    let Some(root) = asts.get(main) else {
        return Vec::new();
    };
    let mut walk = Walk {
        asts: &asts,
        view,
        inputs,
        file: main.to_path_buf(),
        scopes: vec![BTreeMap::new()],
        guards: Vec::new(),
        macros: Vec::new(),
        called: BTreeSet::new(),
        active: Vec::new(),
        open_files: vec![main.to_path_buf()],
        probe: false,
        reported: BTreeSet::new(),
        findings: Vec::new(),
    };
    walk.stmt(root);
    // A macro no call reached is still checked, its arguments of unknown shape.
    let mut i = 0;
    while i < walk.macros.len() {
        if !walk.called.contains(&i) {
            walk.expand(i, &[], &[]);
        }
        i += 1;
    }
    walk.findings
}

struct Walk<'t, 's> {
    asts: &'t BTreeMap<PathBuf, Stmt<'s>>,
    view: RoleView<'t>,
    inputs: &'t [String],
    /// The file whose nodes are being walked.
    file: PathBuf,
    scopes: Vec<BTreeMap<String, Ty>>,
    /// Paths tested `is defined` around the node being walked.
    guards: Vec<String>,
    macros: Vec<(PathBuf, &'t ast::Macro<'s>)>,
    called: BTreeSet<usize>,
    /// Macros being expanded (a recursive call is not followed again).
    active: Vec<usize>,
    /// Includes being walked (a self-include is the render check's business).
    open_files: Vec<PathBuf>,
    /// Inside an `is defined` test or a `default` filter: absence is what is being asked.
    probe: bool,
    reported: BTreeSet<(PathBuf, String)>,
    findings: Vec<Finding>,
}

/// `a.b["c"][0]` as written, for messages and guards.
fn path_of(e: &Expr<'_>) -> Option<String> {
    match e {
        Expr::Var(v) => Some(v.id.to_owned()),
        Expr::GetAttr(a) => Some(format!("{}.{}", path_of(&a.expr)?, a.name)),
        Expr::GetItem(i) => {
            let base = path_of(&i.expr)?;
            Some(match &i.subscript_expr {
                Expr::Const(c) => match c.value.as_str() {
                    Some(s) => format!("{base}[\"{s}\"]"),
                    None => format!("{base}[{}]", c.value),
                },
                _ => format!("{base}[…]"),
            })
        }
        Expr::Filter(f) => Some(format!("({} | {})", path_of(f.expr.as_ref()?)?, f.name)),
        _ => None,
    }
}

/// The paths `e` proves defined when it is true (`positive`) or false.
fn defined_paths(e: &Expr<'_>, positive: bool, out: &mut Vec<String>) {
    match e {
        // True means there (an absent variable is false under the semi-strict renderer).
        Expr::Var(v) if positive => out.push(v.id.to_owned()),
        Expr::Test(t) => {
            let proves = match t.name {
                "defined" => positive,
                "undefined" => !positive,
                _ => false,
            };
            if proves && let Some(path) = path_of(&t.expr) {
                out.push(path);
            }
        }
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOpKind::Not) => {
            defined_paths(&u.expr, !positive, out);
        }
        Expr::BinOp(b) => match b.op {
            ast::BinOpKind::ScAnd if positive => {
                defined_paths(&b.left, true, out);
                defined_paths(&b.right, true, out);
            }
            ast::BinOpKind::ScOr if !positive => {
                defined_paths(&b.left, false, out);
                defined_paths(&b.right, false, out);
            }
            _ => {}
        },
        _ => {}
    }
}

impl<'t, 's> Walk<'t, 's> {
    fn report(&mut self, span: minijinja::machinery::Span, key: String, problem: Problem) {
        if !self.reported.insert((self.file.clone(), key)) {
            return;
        }
        self.findings.push(Finding {
            file: self.file.clone(),
            start: span.start_offset as usize,
            end: span.end_offset as usize,
            problem,
        });
    }

    fn guarded(&self, path: &str) -> bool {
        self.guards.iter().any(|g| {
            path == g
                || path
                    .strip_prefix(g.as_str())
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        })
    }

    fn local(&self, name: &str) -> Option<Ty> {
        self.scopes.iter().rev().find_map(|s| s.get(name).cloned())
    }

    fn bind(&mut self, target: &'t Expr<'s>, ty: Ty) {
        match target {
            Expr::Var(v) => {
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert(v.id.to_owned(), ty);
                }
            }
            // Unpacking targets (`for k, v in …`) parse as a list.
            Expr::List(t) => {
                for (i, item) in t.items.iter().enumerate() {
                    let part = match &ty {
                        Ty::Tuple(parts) => parts.get(i).cloned(),
                        Ty::Open | Ty::Of(Shape::Any) => Some(Ty::Open),
                        _ => None,
                    };
                    let part = part.unwrap_or_else(|| {
                        Ty::Unknown("a part unpacked from a value that is not a pair".into())
                    });
                    self.bind(item, part);
                }
            }
            // `{% set ns.count = … %}` writes into a namespace.
            other => {
                self.expr(other);
            }
        }
    }

    fn body(&mut self, stmts: &'t [Stmt<'s>]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    /// Walk `stmts` with `paths` known to be defined.
    fn guarded_body(&mut self, paths: Vec<String>, stmts: &'t [Stmt<'s>]) {
        let before = self.guards.len();
        self.guards.extend(paths);
        self.body(stmts);
        self.guards.truncate(before);
    }

    fn stmt(&mut self, stmt: &'t Stmt<'s>) {
        match stmt {
            Stmt::Template(t) => self.body(&t.children),
            Stmt::EmitExpr(e) => {
                self.expr(&e.expr);
            }
            Stmt::ForLoop(f) => {
                let iter = self.expr(&f.iter);
                let item = iter.item();
                self.scopes.push(BTreeMap::new());
                self.bind(&f.target, item.clone());
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert("loop".into(), loop_fields(&item));
                }
                if let Some(filter) = &f.filter_expr {
                    self.expr(filter);
                }
                self.body(&f.body);
                self.scopes.pop();
                self.body(&f.else_body);
            }
            Stmt::IfCond(c) => {
                self.condition(&c.expr);
                let mut yes = Vec::new();
                defined_paths(&c.expr, true, &mut yes);
                let mut no = Vec::new();
                defined_paths(&c.expr, false, &mut no);
                self.guarded_body(yes, &c.true_body);
                self.guarded_body(no, &c.false_body);
            }
            Stmt::WithBlock(w) => {
                let values: Vec<Ty> = w.assignments.iter().map(|(_, e)| self.expr(e)).collect();
                self.scopes.push(BTreeMap::new());
                for ((target, _), ty) in w.assignments.iter().zip(values) {
                    self.bind(target, ty);
                }
                self.body(&w.body);
                self.scopes.pop();
            }
            Stmt::Set(s) => {
                let ty = self.expr(&s.expr);
                self.bind(&s.target, ty);
            }
            Stmt::SetBlock(s) => {
                if let Some(filter) = &s.filter {
                    self.expr(filter);
                }
                self.body(&s.body);
                self.bind(&s.target, TEXT);
            }
            Stmt::AutoEscape(a) => self.body(&a.body),
            Stmt::FilterBlock(f) => {
                self.expr(&f.filter);
                self.body(&f.body);
            }
            Stmt::Block(b) => self.body(&b.body),
            Stmt::Import(i) => {
                let module = self.resolve(&i.expr).map_or(Ty::Open, Ty::Module);
                self.bind(&i.name, module);
            }
            Stmt::FromImport(i) => {
                let module = self.resolve(&i.expr);
                for (name, alias) in &i.names {
                    let Expr::Var(v) = name else { continue };
                    let ty = module
                        .as_ref()
                        .and_then(|m| self.module_macro(m, v.id))
                        .map_or(Ty::Open, Ty::Macro);
                    self.bind(alias.as_ref().unwrap_or(name), ty);
                }
            }
            Stmt::Extends(e) => self.include(&e.name),
            Stmt::Include(i) => self.include(&i.name),
            Stmt::Macro(m) => {
                let index = self.register(m);
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert(m.name.to_owned(), Ty::Macro(index));
                }
            }
            Stmt::CallBlock(c) => {
                self.call(&c.call);
                self.scopes.push(BTreeMap::new());
                for arg in &c.macro_decl.args {
                    self.bind(
                        arg,
                        Ty::Unknown("an argument `caller()` is called with".into()),
                    );
                }
                self.body(&c.macro_decl.body);
                self.scopes.pop();
            }
            Stmt::Do(d) => {
                self.call(&d.call);
            }
            _ => {}
        }
    }

    /// The real path a constant template name refers to, relative to the current file.
    fn resolve(&mut self, name: &'t Expr<'s>) -> Option<PathBuf> {
        let Expr::Const(c) = name else {
            self.expr(name);
            return None;
        };
        let written = c.value.as_str()?;
        let dir = self.file.parent().unwrap_or(Path::new("/"));
        let real = normalize(&dir.join(written));
        self.asts.contains_key(&real).then_some(real)
    }

    /// Walk an included (or extended) template in the including scope.
    fn include(&mut self, name: &'t Expr<'s>) {
        let Some(real) = self.resolve(name) else {
            return;
        };
        if self.open_files.contains(&real) {
            return;
        }
        let Some(ast) = self.asts.get(&real) else {
            return;
        };
        let saved = std::mem::replace(&mut self.file, real.clone());
        self.open_files.push(real);
        self.scopes.push(BTreeMap::new());
        self.stmt(ast);
        self.scopes.pop();
        self.open_files.pop();
        self.file = saved;
    }

    fn register(&mut self, m: &'t ast::Macro<'s>) -> usize {
        if let Some(i) = self
            .macros
            .iter()
            .position(|(_, known)| std::ptr::eq(*known, m))
        {
            return i;
        }
        self.macros.push((self.file.clone(), m));
        self.macros.len() - 1
    }

    /// The macro `name` defined at the top of the template at `module`.
    fn module_macro(&mut self, module: &Path, name: &str) -> Option<usize> {
        let Stmt::Template(t) = self.asts.get(module)? else {
            return None;
        };
        let found = t.children.iter().find_map(|s| match s {
            Stmt::Macro(m) if m.name == name => Some(&**m),
            _ => None,
        })?;
        let saved = std::mem::replace(&mut self.file, module.to_path_buf());
        let index = self.register(found);
        self.file = saved;
        Some(index)
    }

    /// Walk macro `index`'s body with its arguments bound to the types of this call's.
    fn expand(&mut self, index: usize, positional: &[Ty], named: &[(String, Ty)]) {
        self.called.insert(index);
        if self.active.contains(&index) {
            return;
        }
        let (file, m) = self.macros[index].clone();
        let saved = std::mem::replace(&mut self.file, file);
        let first_default = m.args.len().saturating_sub(m.defaults.len());
        let mut scope = BTreeMap::new();
        for (k, arg) in m.args.iter().enumerate() {
            let Expr::Var(v) = arg else { continue };
            let passed = positional.get(k).cloned().or_else(|| {
                named
                    .iter()
                    .find(|(n, _)| n == v.id)
                    .map(|(_, t)| t.clone())
            });
            let ty = match passed {
                Some(ty) => ty,
                None if k >= first_default => self.expr(&m.defaults[k - first_default]),
                None => Ty::Unknown(format!(
                    "the argument `{}` of macro `{}`, which no call here passes",
                    v.id, m.name
                )),
            };
            scope.insert(v.id.to_owned(), ty);
        }
        scope.insert("varargs".into(), Ty::List(Box::new(Ty::Open)));
        scope.insert("kwargs".into(), Ty::Open);
        scope.insert("caller".into(), Ty::Open);
        self.active.push(index);
        self.scopes.push(scope);
        self.body(&m.body);
        self.scopes.pop();
        self.active.pop();
        self.file = saved;
    }
}
