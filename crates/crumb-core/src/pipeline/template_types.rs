//! What the template checker knows of a value, and the result shapes of the filters, methods and
//! tests it can follow (`length` is a number, `first` an item of the list, `map(attribute=…)` a
//! list of that field). Anything else is [`Ty::Unknown`]: reading a field off it is a warning,
//! never a silent pass.

use crate::pipeline::template_variables::Shape;

/// A value's type as far as the checker can follow it.
#[derive(Debug, Clone)]
pub(crate) enum Ty {
    /// A context value (or a part of one) of this shape.
    Of(Shape),
    /// A list built by the template (a filter, a literal); its items have this type.
    List(Box<Ty>),
    /// A tuple (`dict|items` yields key/value pairs).
    Tuple(Vec<Ty>),
    /// A map literal or a `loop`: exactly these fields.
    Fields(Vec<(String, Ty)>),
    /// The top-level `inputs`: its keys are the declared inputs.
    Inputs,
    /// A macro, by its index in the checker's list.
    Macro(usize),
    /// An imported template (`{% import "m.j2" as m %}`), by its real path.
    Module(std::path::PathBuf),
    /// Open by design (an agent's `data`, a `namespace()`, a `dict()`): fields are not checked.
    Open,
    /// The checker could not follow this value's shape; says why.
    Unknown(String),
}

pub(crate) const TEXT: Ty = Ty::Of(Shape::Text);
pub(crate) const NUMBER: Ty = Ty::Of(Shape::Number);
pub(crate) const BOOL: Ty = Ty::Of(Shape::Bool);

impl Ty {
    /// The type of one item when iterating: a list's items, a map's keys, a string's characters.
    pub(crate) fn item(&self) -> Ty {
        match self {
            Ty::Of(Shape::List(item)) => Ty::Of(**item),
            Ty::List(item) => (**item).clone(),
            Ty::Of(
                Shape::Text
                | Shape::Record(_)
                | Shape::Texts(_)
                | Shape::Map(_)
                | Shape::KindMap(_)
                | Shape::RoleMap(_),
            )
            | Ty::Fields(_)
            | Ty::Inputs => TEXT,
            Ty::Of(Shape::Any) | Ty::Open => Ty::Open,
            Ty::Unknown(why) => Ty::Unknown(why.clone()),
            other => Ty::Unknown(format!("an item of {}", other.describe())),
        }
    }

    /// The type of a map's values (for `items`, `values`, `dictsort`).
    fn values(&self) -> Ty {
        match self {
            Ty::Of(Shape::Map(v) | Shape::KindMap(v) | Shape::RoleMap(v)) => Ty::Of(**v),
            Ty::Of(Shape::Texts(_)) => TEXT,
            Ty::Of(Shape::Any) | Ty::Open | Ty::Inputs => Ty::Open,
            _ => Ty::Unknown("a value of a record with fields of different shapes".into()),
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Ty::Of(Shape::Number) => "a number",
            Ty::Of(Shape::Bool) => "a boolean",
            Ty::Tuple(_) => "a tuple",
            Ty::Macro(_) => "a macro",
            Ty::Module(_) => "an imported template",
            _ => "a value",
        }
    }

    /// Whether the checker follows this value (fields read off it are checked or open by design).
    pub(crate) fn known(&self) -> bool {
        !matches!(self, Ty::Unknown(_))
    }
}

/// `loop` inside a `for` whose items are `item`.
pub(crate) fn loop_fields(item: &Ty) -> Ty {
    let mut fields: Vec<(String, Ty)> = [
        "index",
        "index0",
        "revindex",
        "revindex0",
        "length",
        "depth",
        "depth0",
    ]
    .iter()
    .map(|n| ((*n).to_owned(), NUMBER))
    .collect();
    fields.extend(["first", "last"].iter().map(|n| ((*n).to_owned(), BOOL)));
    fields.extend(
        ["previtem", "nextitem"]
            .iter()
            .map(|n| ((*n).to_owned(), item.clone())),
    );
    Ty::Fields(fields)
}

/// The result of filter `name` applied to `input`; `attribute` is its `attribute=` argument
/// (already resolved to the item field's type, or `None`).
pub(crate) fn filter_result(name: &str, input: &Ty, attribute: Option<Ty>) -> Ty {
    match name {
        "length" | "count" | "wordcount" | "int" | "float" | "abs" | "round" | "sum" => NUMBER,
        "upper" | "lower" | "title" | "capitalize" | "trim" | "string" | "join" | "replace"
        | "safe" | "escape" | "e" | "indent" | "format" | "urlencode" | "tojson" | "pprint" => TEXT,
        "split" | "lines" => Ty::List(Box::new(TEXT)),
        "bool" => BOOL,
        "first" | "last" | "random" | "min" | "max" => match input {
            Ty::Of(Shape::Text) => TEXT,
            other => other.item(),
        },
        "sort" | "reverse" | "unique" | "list" | "reject" | "select" | "rejectattr"
        | "selectattr" => match input {
            Ty::Of(Shape::List(_)) | Ty::List(_) => input.clone(),
            Ty::Open | Ty::Of(Shape::Any) => Ty::Open,
            Ty::Unknown(why) => Ty::Unknown(why.clone()),
            other => Ty::List(Box::new(other.item())),
        },
        "map" => Ty::List(Box::new(attribute.unwrap_or_else(|| {
            Ty::Unknown("the items `map` makes with a filter".into())
        }))),
        "attr" => attribute.unwrap_or_else(|| Ty::Unknown("the result of `attr`".into())),
        "items" | "dictsort" => Ty::List(Box::new(Ty::Tuple(vec![TEXT, input.values()]))),
        "batch" | "slice" => Ty::List(Box::new(Ty::List(Box::new(input.item())))),
        "default" | "d" => input.clone(),
        other => Ty::Unknown(format!("the result of the filter `{other}`")),
    }
}

/// The result of calling method `name` on `receiver` (`spec.body.upper()`, `d.items()`).
pub(crate) fn method_result(name: &str, receiver: &Ty) -> Ty {
    let text = matches!(receiver, Ty::Of(Shape::Text));
    match name {
        "upper" | "lower" | "title" | "capitalize" | "strip" | "lstrip" | "rstrip" | "replace"
        | "format" | "join"
            if text =>
        {
            TEXT
        }
        "split" | "splitlines" if text => Ty::List(Box::new(TEXT)),
        "startswith" | "endswith" | "isdigit" | "isalpha" | "isalnum" | "isspace" | "islower"
        | "isupper" | "istitle"
            if text =>
        {
            BOOL
        }
        "count" | "find" | "rfind" if text => NUMBER,
        "keys" => Ty::List(Box::new(TEXT)),
        "values" => Ty::List(Box::new(receiver.values())),
        "items" => Ty::List(Box::new(Ty::Tuple(vec![TEXT, receiver.values()]))),
        _ if matches!(receiver, Ty::Open | Ty::Of(Shape::Any)) => Ty::Open,
        other => Ty::Unknown(format!("the result of the method `{other}()`")),
    }
}
