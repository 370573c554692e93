//! The shipped price table (`prices.yaml` at the repository root, embedded at build time): what a
//! turn cost when its CLI reports tokens but no price (codex, gemini). An estimate is recorded as
//! such (`cost_source: estimated` and the table's `price_table` version in the `agent.stop`), and
//! a cost the CLI reports is always kept as it is.

use std::sync::LazyLock;

use indexmap::IndexMap;
use serde::Deserialize;

use super::Usage;

/// The table as shipped.
const SHIPPED: &str = include_str!("../../prices.yaml");

/// US dollars per million tokens of one model (the type presets use for their own `prices:`).
pub(crate) type Price = crate::pipeline::preset::ModelPrice;
pub(crate) use crate::pipeline::preset::PriceOverride;

/// A price table: its version and each model's price.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PriceTable {
    pub version: String,
    pub models: IndexMap<String, Price>,
}

/// The shipped table; a table that does not parse is a build defect, caught by the test below.
pub(crate) static TABLE: LazyLock<PriceTable> = LazyLock::new(|| {
    serde_saphyr::from_str(SHIPPED).unwrap_or_else(|_| PriceTable {
        version: "unreadable".to_owned(),
        models: IndexMap::new(),
    })
});

impl PriceTable {
    /// The price of `model`: its own entry, else the longest key it starts with.
    pub(crate) fn price(&self, model: &str) -> Option<&Price> {
        self.models.get(model).or_else(|| {
            self.models
                .iter()
                .filter(|(key, _)| model.starts_with(key.as_str()))
                .max_by_key(|(key, _)| key.len())
                .map(|(_, price)| price)
        })
    }

    /// The estimated cost of `usage` on `model`, when the table prices it and the turn counted
    /// any tokens.
    pub(crate) fn estimate(&self, model: &str, usage: &Usage) -> Option<f64> {
        let price = self.price(model)?;
        let parts = [
            (usage.tokens_in, price.input),
            (usage.tokens_out, price.output),
            (usage.cache_read, price.cache_read),
            (usage.cache_write, price.cache_write),
            (usage.thinking_tokens, price.reasoning),
        ];
        if parts.iter().all(|(tokens, _)| tokens.is_none()) {
            return None;
        }
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let dollars: f64 = parts
            .iter()
            .map(|(tokens, per_million)| tokens.unwrap_or(0) as f64 * per_million / 1e6)
            .sum();
        Some(dollars)
    }
}

/// Where a turn's cost came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CostSource {
    /// The CLI reported it.
    Reported,
    /// Estimated from the price table.
    Estimated,
}

impl CostSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CostSource::Reported => "reported",
            CostSource::Estimated => "estimated",
        }
    }
}

/// How a turn's cost was settled: where it came from, and for an estimate the table that priced
/// it (the shipped table's version, or `preset <name>`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settled {
    pub source: CostSource,
    pub table: Option<String>,
}

/// Fill in `usage.cost_usd` when the CLI reported none, pricing the model the CLI reported, else
/// the one requested: from the preset's prices when they name it, else the shipped table.
pub(crate) fn settle(
    usage: &mut Usage,
    requested: Option<&str>,
    preset: Option<&PriceOverride>,
) -> Option<Settled> {
    if usage.cost_usd.is_some() {
        return Some(Settled {
            source: CostSource::Reported,
            table: None,
        });
    }
    let model = usage.model.as_deref().or(requested)?;
    let from_preset = preset.and_then(|preset| {
        let table = PriceTable {
            version: format!("preset {}", preset.preset),
            models: preset.models.clone(),
        };
        let cost = table.estimate(model, usage)?;
        Some((cost, table.version))
    });
    let (cost, table) = match from_preset {
        Some(found) => found,
        None => (TABLE.estimate(model, usage)?, TABLE.version.clone()),
    };
    usage.cost_usd = Some(cost);
    Some(Settled {
        source: CostSource::Estimated,
        table: Some(table),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses_and_prices_the_default_models() {
        let table: PriceTable = serde_saphyr::from_str(SHIPPED).unwrap();
        assert_eq!(*TABLE, table);
        for model in [
            super::super::gemini_cli::DEFAULT_MODEL,
            "gpt-5-codex",
            "gemini-2.5-flash",
        ] {
            assert!(table.price(model).is_some(), "{model}");
        }
        assert_eq!(
            table.price("gemini-2.5-pro-preview-05-06"),
            table.price("gemini-2.5-pro")
        );
        assert_eq!(
            table.price("gemini-2.5-flash-lite-001"),
            table.price("gemini-2.5-flash-lite"),
            "the longest key wins"
        );
        assert!(table.price("local-model").is_none());
    }

    #[test]
    fn a_reported_cost_is_kept_and_a_missing_one_estimated() {
        let mut reported = Usage {
            tokens_in: Some(1_000_000),
            cost_usd: Some(0.5),
            ..Usage::default()
        };
        assert_eq!(
            settle(&mut reported, Some("gpt-5"), None).map(|s| s.source),
            Some(CostSource::Reported)
        );
        assert_eq!(reported.cost_usd, Some(0.5));
        let mut gemini = Usage {
            tokens_in: Some(800),
            tokens_out: Some(130),
            cache_read: Some(900),
            thinking_tokens: Some(72),
            model: Some("gemini-2.5-flash".into()),
            ..Usage::default()
        };
        let settled = settle(&mut gemini.clone(), None, None).unwrap();
        assert_eq!(settled.source, CostSource::Estimated);
        assert_eq!(settled.table.as_deref(), Some(TABLE.version.as_str()));
        settle(&mut gemini, None, None);
        let expected = (800.0 * 0.3 + 130.0 * 2.5 + 900.0 * 0.03 + 72.0 * 2.5) / 1e6;
        assert!((gemini.cost_usd.unwrap() - expected).abs() < 1e-12);
        let mut unknown = Usage {
            tokens_in: Some(5),
            ..Usage::default()
        };
        assert_eq!(settle(&mut unknown, Some("local-model"), None), None);
        assert_eq!(unknown.cost_usd, None);
        let mut silent = Usage::default();
        assert_eq!(settle(&mut silent, Some("gpt-5"), None), None);
    }

    #[test]
    fn a_preset_s_prices_win_and_the_shipped_table_prices_the_rest() {
        let preset = PriceOverride {
            preset: "local".into(),
            models: [(
                "local-model".to_owned(),
                Price {
                    input: 1.0,
                    output: 2.0,
                    cache_read: 0.0,
                    cache_write: 0.0,
                    reasoning: 0.0,
                },
            )]
            .into_iter()
            .collect(),
        };
        let mut local = Usage {
            tokens_in: Some(1_000_000),
            tokens_out: Some(500_000),
            model: Some("local-model-q4".into()),
            ..Usage::default()
        };
        let settled = settle(&mut local, None, Some(&preset)).unwrap();
        assert_eq!(settled.table.as_deref(), Some("preset local"));
        assert!((local.cost_usd.unwrap() - 2.0).abs() < 1e-12);
        let mut shipped = Usage {
            tokens_in: Some(1_000_000),
            model: Some("gpt-5".into()),
            ..Usage::default()
        };
        let settled = settle(&mut shipped, None, Some(&preset)).unwrap();
        assert_eq!(settled.table.as_deref(), Some(TABLE.version.as_str()));
        assert!((shipped.cost_usd.unwrap() - 1.25).abs() < 1e-12);
    }
}
