//! Pass 3's variable check, walked through minijinja's parse tree for one role: every name a
//! template reads is a local (`set`, `for`, `with`, macro arguments, imports) or a variable of
//! that role's context ([`RoleView`]), and every field read off it exists in its shape — through
//! loops (`{% for c in qa.checks %}{{ c.stauts }}`), indexing (`qa.checks[0]`), `set`, macros
//! (checked with the arguments of each call) and the filters whose result shape is known.
//! Included templates are walked in the including scope, as they render. A field read off a
//! value whose shape the checker cannot follow is a warning, never a silent pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use minijinja::machinery::ast::{self, CallArg, Expr, Stmt};

use crate::pipeline::lexical_path::normalize;
use crate::pipeline::template_types::{
    BOOL, NUMBER, TEXT, Ty, filter_result, loop_fields, method_result,
};
use crate::pipeline::template_variables::{RoleView, Shape, field_of, shape_of};

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
    "range", "dict", "namespace", "debug", "loop", "self", "super", "caller", "varargs", "kwargs",
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
            let name = path.to_string_lossy();
            let parsed = minijinja::machinery::parse(text, &name, Default::default()).ok()?;
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
        _ => None,
    }
}

/// The paths `e` proves defined when it is true (`positive`) or false.
fn defined_paths(e: &Expr<'_>, positive: bool, out: &mut Vec<String>) {
    match e {
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

    fn bind(&mut self, target: &Expr<'_>, ty: Ty) {
        match target {
            Expr::Var(v) => {
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert(v.id.to_owned(), ty);
                }
            }
            Expr::Tuple(t) => {
                for (i, item) in t.items.iter().enumerate() {
                    let part = match &ty {
                        Ty::Tuple(parts) => parts.get(i).cloned(),
                        Ty::Open | Ty::Of(Shape::Any) => Some(Ty::Open),
                        _ => None,
                    };
                    let part = part.unwrap_or_else(|| Ty::Unknown("a part unpacked from a value that is not a pair".into()));
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
                self.expr(&c.expr);
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
                    self.bind(arg, Ty::Unknown("an argument `caller()` is called with".into()));
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
        if let Some(i) = self.macros.iter().position(|(_, known)| std::ptr::eq(*known, m)) {
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
            let passed = positional
                .get(k)
                .cloned()
                .or_else(|| named.iter().find(|(n, _)| n == v.id).map(|(_, t)| t.clone()));
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

    /// The types of a call's arguments (positional, named), each walked.
    fn args(&mut self, args: &'t [CallArg<'s>]) -> (Vec<Ty>, Vec<(String, Ty)>) {
        let mut positional = Vec::new();
        let mut named = Vec::new();
        for arg in args {
            match arg {
                CallArg::Pos(e) => positional.push(self.expr(e)),
                CallArg::Kwarg(name, e) => named.push(((*name).to_owned(), self.expr(e))),
                CallArg::PosSplat(e) | CallArg::KwargSplat(e) => {
                    self.expr(e);
                }
            }
        }
        (positional, named)
    }

    fn call(&mut self, c: &'t ast::Call<'s>) -> Ty {
        match &c.expr {
            Expr::Var(v) => {
                let local = self.local(v.id);
                let (positional, named) = self.args(&c.args);
                match (local, v.id) {
                    (Some(Ty::Macro(i)), _) => {
                        self.expand(i, &positional, &named);
                        TEXT
                    }
                    (Some(_), _) => Ty::Unknown(format!("the result of calling `{}`", v.id)),
                    (None, "range") => Ty::List(Box::new(NUMBER)),
                    (None, "dict") => Ty::Fields(named),
                    (None, "namespace") => Ty::Open,
                    (None, "debug" | "caller" | "super") => TEXT,
                    (None, _) => {
                        self.expr(&c.expr);
                        Ty::Open
                    }
                }
            }
            Expr::GetAttr(a) => {
                if matches!(&a.expr, Expr::Var(v) if v.id == "self") {
                    self.args(&c.args);
                    return TEXT;
                }
                let receiver = self.expr(&a.expr);
                let (positional, named) = self.args(&c.args);
                if let Ty::Module(module) = &receiver {
                    return match self.module_macro(module, a.name) {
                        Some(i) => {
                            self.expand(i, &positional, &named);
                            TEXT
                        }
                        None => Ty::Open,
                    };
                }
                method_result(a.name, &receiver)
            }
            other => {
                self.expr(other);
                self.args(&c.args);
                Ty::Unknown("the result of a call".into())
            }
        }
    }

    fn probing(&mut self, e: &'t Expr<'s>) -> Ty {
        let saved = std::mem::replace(&mut self.probe, true);
        let ty = self.expr(e);
        self.probe = saved;
        ty
    }

    fn var(&mut self, v: &ast::Spanned<ast::Var<'s>>) -> Ty {
        let name = v.id;
        if let Some(ty) = self.local(name) {
            return ty;
        }
        if name == "inputs" {
            return Ty::Inputs;
        }
        if let Some(shape) = shape_of(name) {
            if let Some(kinds) = self.view.unseen(name)
                && !self.probe
                && !self.guarded(name)
            {
                self.report(v.span(), name.to_owned(), Problem::Unseen { name: name.to_owned(), kinds });
                return Ty::Open;
            }
            return Ty::Of(shape);
        }
        if BUILTINS.contains(&name) {
            return Ty::Open;
        }
        self.report(
            v.span(),
            name.to_owned(),
            Problem::Unknown { name: name.to_owned(), why: None },
        );
        Ty::Open
    }

    /// Field `key` (a name or a constant index) of `base`, read at `span` by `whole`.
    fn field(&mut self, base: &Ty, key: &minijinja::Value, whole: &Expr<'s>, span: minijinja::machinery::Span, of: &Expr<'s>) -> Ty {
        let at = path_of(of).unwrap_or_else(|| "this value".into());
        let path = path_of(whole).unwrap_or_else(|| at.clone());
        let name = key.as_str().map(str::to_owned);
        match (base, name) {
            (Ty::Of(Shape::KindMap(v)), Some(kind)) => {
                if !self.view.sees_kind(&kind) && !self.probe && !self.guarded(&path) {
                    self.report(span, path.clone(), Problem::Unseen { name: path, kinds: vec![kind] });
                }
                Ty::Of(**v)
            }
            (Ty::Of(Shape::List(item)), None) => Ty::Of(**item),
            (Ty::List(item), None) => (**item).clone(),
            (Ty::Tuple(parts), None) => key
                .as_usize()
                .and_then(|i| parts.get(i).cloned())
                .unwrap_or_else(|| Ty::Unknown("a part of a tuple".into())),
            (Ty::Of(shape), Some(name)) => match field_of(*shape, &at, &name) {
                Ok(s) => Ty::Of(s),
                Err(why) => {
                    self.report(span, path.clone(), Problem::Unknown { name: path, why: Some(why) });
                    Ty::Open
                }
            },
            (Ty::Fields(fields), Some(name)) => match fields.iter().find(|(n, _)| *n == name) {
                Some((_, ty)) => ty.clone(),
                None => {
                    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
                    let why = format!("`{at}` has no field `{name}`; its fields: {}", names.join(", "));
                    self.report(span, path.clone(), Problem::Unknown { name: path, why: Some(why) });
                    Ty::Open
                }
            },
            (Ty::Inputs, Some(name)) => {
                if let Some(why) = crate::pipeline::templates::unknown_input(&format!("inputs.{name}"), self.inputs) {
                    self.report(span, path.clone(), Problem::Unknown { name: path, why: Some(why) });
                    return Ty::Open;
                }
                Ty::Of(Shape::Text)
            }
            (Ty::Unknown(why), _) => {
                if !self.probe {
                    let why = why.clone();
                    self.report(span, path.clone(), Problem::ShapeUnknown { path, why });
                }
                Ty::Open
            }
            (Ty::Of(Shape::Any) | Ty::Open, _) => Ty::Open,
            (Ty::Of(Shape::Text), None) => TEXT,
            (other, _) => other.item(),
        }
    }

    fn expr(&mut self, e: &'t Expr<'s>) -> Ty {
        match e {
            Expr::Var(v) => self.var(v),
            Expr::Const(c) => {
                if c.value.as_str().is_some() {
                    TEXT
                } else if c.value.is_number() {
                    NUMBER
                } else if matches!(c.value.kind(), minijinja::value::ValueKind::Bool) {
                    BOOL
                } else {
                    Ty::Open
                }
            }
            Expr::Slice(s) => {
                let base = self.expr(&s.expr);
                for part in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                    self.expr(part);
                }
                base
            }
            Expr::UnaryOp(u) => {
                self.expr(&u.expr);
                match u.op {
                    ast::UnaryOpKind::Not => BOOL,
                    ast::UnaryOpKind::Neg => NUMBER,
                }
            }
            Expr::BinOp(b) => self.binop(b),
            Expr::Compare(c) => {
                self.expr(&c.expr);
                for op in &c.ops {
                    self.expr(&op.expr);
                }
                BOOL
            }
            Expr::IfExpr(i) => {
                self.expr(&i.test_expr);
                let mut yes = Vec::new();
                defined_paths(&i.test_expr, true, &mut yes);
                let before = self.guards.len();
                self.guards.extend(yes);
                let ty = self.expr(&i.true_expr);
                self.guards.truncate(before);
                if let Some(other) = &i.false_expr {
                    let alt = self.expr(other);
                    if !ty.known() {
                        return alt;
                    }
                }
                ty
            }
            Expr::Filter(f) => self.filter(f),
            Expr::Test(t) => {
                if matches!(t.name, "defined" | "undefined") {
                    self.probing(&t.expr);
                } else {
                    self.expr(&t.expr);
                }
                self.args(&t.args);
                BOOL
            }
            Expr::GetAttr(a) => {
                let base = self.expr(&a.expr);
                self.field(&base, &minijinja::Value::from(a.name), e, a.span(), &a.expr)
            }
            Expr::GetItem(i) => {
                let base = self.expr(&i.expr);
                let sub = self.expr(&i.subscript_expr);
                match &i.subscript_expr {
                    Expr::Const(c) => self.field(&base, &c.value, e, i.span(), &i.expr),
                    _ => match base {
                        Ty::Of(Shape::List(item)) => Ty::Of(*item),
                        Ty::List(item) => *item,
                        Ty::Of(Shape::Map(v) | Shape::KindMap(v) | Shape::RoleMap(v)) => Ty::Of(*v),
                        Ty::Of(Shape::Text) => TEXT,
                        Ty::Of(Shape::Any) | Ty::Open | Ty::Inputs => Ty::Open,
                        _ if matches!(sub, Ty::Of(Shape::Text)) => {
                            Ty::Unknown("a field chosen by a computed key".into())
                        }
                        other => other.item(),
                    },
                }
            }
            Expr::Call(c) => self.call(c),
            Expr::List(l) => {
                let items: Vec<Ty> = l.items.iter().map(|i| self.expr(i)).collect();
                Ty::List(Box::new(
                    items.into_iter().next().unwrap_or_else(|| Ty::Unknown("an item of an empty list".into())),
                ))
            }
            Expr::Tuple(t) => Ty::Tuple(t.items.iter().map(|i| self.expr(i)).collect()),
            Expr::Map(m) => {
                let mut fields = Vec::new();
                let mut all_named = true;
                for (k, v) in m.keys.iter().zip(&m.values) {
                    self.expr(k);
                    let ty = self.expr(v);
                    match k {
                        Expr::Const(c) if c.value.as_str().is_some() => {
                            fields.push((c.value.as_str().unwrap_or_default().to_owned(), ty));
                        }
                        _ => all_named = false,
                    }
                }
                if all_named { Ty::Fields(fields) } else { Ty::Open }
            }
        }
    }

    fn binop(&mut self, b: &'t ast::Spanned<ast::BinOp<'s>>) -> Ty {
        use ast::BinOpKind as K;
        let left = self.expr(&b.left);
        let mut guards = Vec::new();
        match b.op {
            K::ScAnd => defined_paths(&b.left, true, &mut guards),
            K::ScOr => defined_paths(&b.left, false, &mut guards),
            _ => {}
        }
        let before = self.guards.len();
        self.guards.extend(guards);
        let right = self.expr(&b.right);
        self.guards.truncate(before);
        match b.op {
            K::Concat => TEXT,
            K::Eq | K::Ne | K::Lt | K::Lte | K::Gt | K::Gte | K::In => BOOL,
            K::ScAnd => right,
            K::ScOr => {
                if left.known() {
                    left
                } else {
                    right
                }
            }
            K::Add | K::Mul => match (&left, &right) {
                (Ty::Of(Shape::Number), Ty::Of(Shape::Number)) => NUMBER,
                (Ty::Of(Shape::Text), _) | (_, Ty::Of(Shape::Text)) => TEXT,
                (Ty::Of(Shape::List(_)) | Ty::List(_), _) => left,
                _ => Ty::Unknown("the result of `+` or `*` on values of unknown shape".into()),
            },
            K::Sub | K::Div | K::FloorDiv | K::Rem | K::Pow => NUMBER,
        }
    }

    fn filter(&mut self, f: &'t ast::Spanned<ast::Filter<'s>>) -> Ty {
        let input = match &f.expr {
            Some(e) if matches!(f.name, "default" | "d") => self.probing(e),
            Some(e) => self.expr(e),
            None => Ty::Open,
        };
        let (positional, _) = self.args(&f.args);
        // `map(attribute="x")`, `sort(attribute="x")`, `attr("x")`, `selectattr("x")`: the
        // field is read off every item (off the value itself for `attr`).
        let named = f.args.iter().find_map(|a| match a {
            CallArg::Kwarg("attribute", Expr::Const(c)) => c.value.as_str().map(str::to_owned),
            _ => None,
        });
        let first = match f.args.first() {
            Some(CallArg::Pos(Expr::Const(c))) if matches!(f.name, "attr" | "selectattr" | "rejectattr") => {
                c.value.as_str().map(str::to_owned)
            }
            _ => None,
        };
        let attribute = named.or(first).map(|name| {
            let of = f.expr.as_ref().and_then(path_of).unwrap_or_else(|| "this value".into());
            let (item, at) = if f.name == "attr" {
                (input.clone(), of)
            } else {
                (input.item(), format!("{of}[*]"))
            };
            self.read_field(&item, &name, &at, f.span())
        });
        if f.name == "default" || f.name == "d" {
            if let Some(fallback) = positional.into_iter().next()
                && !input.known()
            {
                return fallback;
            }
            return input;
        }
        filter_result(f.name, &input, attribute)
    }

    /// Field `name` of an item of type `item`, as a filter's `attribute` reads it.
    fn read_field(&mut self, item: &Ty, name: &str, at: &str, span: minijinja::machinery::Span) -> Ty {
        let path = format!("{at}.{name}");
        match item {
            Ty::Of(shape) => match field_of(*shape, at, name) {
                Ok(s) => Ty::Of(s),
                Err(why) => {
                    self.report(span, path.clone(), Problem::Unknown { name: path, why: Some(why) });
                    Ty::Open
                }
            },
            Ty::Unknown(why) => {
                let why = why.clone();
                self.report(span, path.clone(), Problem::ShapeUnknown { path, why });
                Ty::Open
            }
            _ => Ty::Open,
        }
    }
}
