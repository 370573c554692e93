//! The expressions of a template, typed: variables, fields and indexes, calls (macros, methods,
//! `range`), filters, tests and operators. Every read is checked where it happens.

// Stopgap until split (see the report of issue 27 items 3-4).
#![allow(clippy::single_match_else, clippy::too_many_lines)]

use minijinja::machinery::ast::{self, CallArg, Expr};

use super::{BUILTINS, Problem, Walk, defined_paths, path_of};
use crate::pipeline::template_types::{BOOL, NUMBER, TEXT, Ty, filter_result, method_result};
use crate::pipeline::template_variables::{Shape, field_of, shape_of};

impl<'t, 's> Walk<'t, 's> {
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

    pub(super) fn call(&mut self, c: &'t ast::Call<'s>) -> Ty {
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

    /// An `if` test: a bare variable is only asked whether it is there and true (the renderer's
    /// semi-strict undefined makes an absent one false), so `{% if qa %}` guards like
    /// `{% if qa is defined %}`; anything more (`qa.passed`, a filter) is a read.
    pub(super) fn condition(&mut self, e: &'t Expr<'s>) {
        match e {
            Expr::Var(_) => {
                self.probing(e);
            }
            Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOpKind::Not) => self.condition(&u.expr),
            Expr::BinOp(b) if matches!(b.op, ast::BinOpKind::ScAnd | ast::BinOpKind::ScOr) => {
                self.condition(&b.left);
                let mut guards = Vec::new();
                defined_paths(&b.left, matches!(b.op, ast::BinOpKind::ScAnd), &mut guards);
                let before = self.guards.len();
                self.guards.extend(guards);
                self.condition(&b.right);
                self.guards.truncate(before);
            }
            _ => {
                self.expr(e);
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
                self.report(
                    v.span(),
                    name.to_owned(),
                    Problem::Unseen {
                        name: name.to_owned(),
                        kinds,
                    },
                );
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
            Problem::Unknown {
                name: name.to_owned(),
                why: None,
            },
        );
        Ty::Open
    }

    /// Field `key` (a name or a constant index) of `base`, read at `span` by `whole`.
    fn field(
        &mut self,
        base: &Ty,
        key: &minijinja::Value,
        whole: &Expr<'s>,
        span: minijinja::machinery::Span,
        of: &Expr<'s>,
    ) -> Ty {
        let at = path_of(of).unwrap_or_else(|| "this value".into());
        let path = path_of(whole).unwrap_or_else(|| at.clone());
        let name = key.as_str().map(str::to_owned);
        match (base, name) {
            (Ty::Of(Shape::KindMap(v)), Some(kind)) => {
                if !self.view.sees_kind(&kind) && !self.probe && !self.guarded(&path) {
                    self.report(
                        span,
                        path.clone(),
                        Problem::Unseen {
                            name: path,
                            kinds: vec![kind],
                        },
                    );
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
                    self.report(
                        span,
                        path.clone(),
                        Problem::Unknown {
                            name: path,
                            why: Some(why),
                        },
                    );
                    Ty::Open
                }
            },
            (Ty::Fields(fields), Some(name)) => match fields.iter().find(|(n, _)| *n == name) {
                Some((_, ty)) => ty.clone(),
                None => {
                    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
                    let why = format!(
                        "`{at}` has no field `{name}`; its fields: {}",
                        names.join(", ")
                    );
                    self.report(
                        span,
                        path.clone(),
                        Problem::Unknown {
                            name: path,
                            why: Some(why),
                        },
                    );
                    Ty::Open
                }
            },
            (Ty::Inputs, Some(name)) => {
                if let Some(why) =
                    crate::pipeline::inputs::unknown_input(&format!("inputs.{name}"), self.inputs)
                {
                    self.report(
                        span,
                        path.clone(),
                        Problem::Unknown {
                            name: path,
                            why: Some(why),
                        },
                    );
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

    pub(super) fn expr(&mut self, e: &'t Expr<'s>) -> Ty {
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
                self.condition(&i.test_expr);
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
                Ty::List(Box::new(items.into_iter().next().unwrap_or_else(|| {
                    Ty::Unknown("an item of an empty list".into())
                })))
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
                if all_named {
                    Ty::Fields(fields)
                } else {
                    Ty::Open
                }
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
            Some(CallArg::Pos(Expr::Const(c)))
                if matches!(f.name, "attr" | "selectattr" | "rejectattr") =>
            {
                c.value.as_str().map(str::to_owned)
            }
            _ => None,
        };
        let attribute = named.or(first).map(|name| {
            let of = f
                .expr
                .as_ref()
                .and_then(path_of)
                .unwrap_or_else(|| "this value".into());
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
    fn read_field(
        &mut self,
        item: &Ty,
        name: &str,
        at: &str,
        span: minijinja::machinery::Span,
    ) -> Ty {
        let path = format!("{at}.{name}");
        match item {
            Ty::Of(shape) => match field_of(*shape, at, name) {
                Ok(s) => Ty::Of(s),
                Err(why) => {
                    self.report(
                        span,
                        path.clone(),
                        Problem::Unknown {
                            name: path,
                            why: Some(why),
                        },
                    );
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
