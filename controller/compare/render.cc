#include "controller/compare/render.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace iofleet::controller::compare {
namespace {

nlohmann::json Num(double x) {
  if (!std::isfinite(x)) return nullptr;
  return x;
}

nlohmann::json Ci(const Interval& i) { return nlohmann::json::array({Num(i.lo), Num(i.hi)}); }

nlohmann::json ArmJson(const ArmSummary& s) {
  nlohmann::json outliers = nlohmann::json::array();
  for (const Outlier& o : s.outliers)
    outliers.push_back({{"run", o.run_id}, {"value", Num(o.value)}});
  return {{"n", s.n},
          {"hosts", s.hosts},
          {"median", Num(s.median)},
          {"ci", Ci(s.median_ci)},
          {"cv", Num(s.cv)},
          {"within_run_cv", Num(s.within_run_cv)},
          {"outliers", std::move(outliers)}};
}

// Scales a value of `m` to a short human string: 512.3k, 1.25 GB/s, 85.2 us.
std::string FormatValue(Metric m, double v) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  switch (m) {
    case Metric::kIops:
      if (a >= 1e6) return absl::StrFormat("%.4gM", v / 1e6);
      if (a >= 1e3) return absl::StrFormat("%.4gk", v / 1e3);
      return absl::StrFormat("%.4g", v);
    case Metric::kBwBytes:
      if (a >= 1e9) return absl::StrFormat("%.4g GB/s", v / 1e9);
      if (a >= 1e6) return absl::StrFormat("%.4g MB/s", v / 1e6);
      if (a >= 1e3) return absl::StrFormat("%.4g kB/s", v / 1e3);
      return absl::StrFormat("%.4g B/s", v);
    default:
      if (a >= 1e9) return absl::StrFormat("%.4g s", v / 1e9);
      if (a >= 1e6) return absl::StrFormat("%.4g ms", v / 1e6);
      if (a >= 1e3) return absl::StrFormat("%.4g us", v / 1e3);
      return absl::StrFormat("%.4g ns", v);
  }
}

std::string FormatPct(double x) {
  return std::isfinite(x) ? absl::StrFormat("%+.2f", x) : std::string("-");
}

std::string FormatP(double p) {
  if (!std::isfinite(p)) return "-";
  if (p < 0.0001) return "<0.0001";
  return absl::StrFormat("%.4f", p);
}

std::string MdEscape(const std::string& s) {
  return absl::StrReplaceAll(s, {{"|", "\\|"}, {"\n", " "}});
}

std::string XmlEscape(const std::string& in) {
  // Control characters other than tab/newline are not allowed in XML 1.0.
  std::string s;
  s.reserve(in.size());
  for (char c : in) {
    if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') s.push_back(c);
  }
  return absl::StrReplaceAll(
      s, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}, {"'", "&apos;"}});
}

nlohmann::json PerHost(const std::vector<HostDelta>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const HostDelta& h : v) {
    out.push_back({{"host", h.host}, {"n", h.n}, {"delta_pct", Num(h.delta_pct)}});
  }
  return out;
}

nlohmann::json UsableJson(const UsableSummary& u) {
  nlohmann::json groups = nlohmann::json::array();
  for (const UsableGroup& g : u.groups) {
    groups.push_back({{"kind", g.kind},
                      {"label", g.label},
                      {"advice", g.advice},
                      {"runs", g.runs},
                      {"admitted", g.admitted},
                      {"details", g.details}});
  }
  return {{"runs_total", u.runs_total},
          {"runs_usable", u.runs_usable},
          {"groups", std::move(groups)},
          {"advice", u.advice},
          {"headline", u.headline}};
}

std::string VerdictCell(const Row& r) {
  std::string v(VerdictName(r.verdict));
  if (r.confounded) absl::StrAppend(&v, " (confounded)");
  if (r.n_needed) absl::StrAppend(&v, absl::StrFormat(" (n≈%d)", *r.n_needed));
  return v;
}

}  // namespace

std::string UsableMarkdown(const UsableSummary& u) {
  std::string out = absl::StrFormat("**%d of %d runs usable.**", u.runs_usable, u.runs_total);
  if (u.groups.empty() && u.advice.empty()) return out + "\n\n";
  absl::StrAppend(&out, "\n\n");
  for (const UsableGroup& g : u.groups) {
    std::string line = g.admitted
                           ? absl::StrFormat("- %d %s %s, admitted by request", g.runs,
                                             g.runs == 1 ? "run" : "runs", g.label)
                           : absl::StrFormat("- %d %s: %s: %s", g.runs,
                                             g.runs == 1 ? "run" : "runs", g.label, g.advice);
    if (!g.details.empty()) absl::StrAppend(&line, " (", absl::StrJoin(g.details, "; "), ")");
    absl::StrAppend(&out, MdEscape(line), "\n");
  }
  for (const std::string& a : u.advice) absl::StrAppend(&out, "- ", MdEscape(a), "\n");
  absl::StrAppend(&out, "\n");
  return out;
}

nlohmann::json ToJson(const CompareResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& r : result.rows) {
    rows.push_back({
        {"cell", r.cell},
        {"metric", std::string(MetricName(r.metric))},
        {"higher_is_better", HigherIsBetter(r.metric)},
        {"threshold", r.threshold},
        {"a", ArmJson(r.a)},
        {"b", ArmJson(r.b)},
        {"design", r.design},
        {"paired", r.paired},
        {"pairs", r.pairs},
        {"hosts_used", r.hosts_used},
        {"runs_unused", r.runs_unused},
        {"n_effective", r.n_effective},
        {"df", Num(r.df)},
        {"residual_sd", Num(r.residual_sd)},
        {"per_host", PerHost(r.per_host)},
        {"heterogeneity_p", Num(r.heterogeneity_p)},
        {"delta_pct", Num(r.delta_pct)},
        {"delta_ci_pct", Ci(r.delta_ci)},
        {"ci_method", r.ci_method},
        {"test", r.test},
        {"p", Num(r.p)},
        {"q", Num(r.q)},
        {"noisy", r.noisy},
        {"without_outliers",
         r.without_outliers
             ? nlohmann::json{{"delta_pct", Num(r.without_outliers->delta_pct)},
                              {"delta_ci_pct", Ci(r.without_outliers->delta_ci)},
                              {"p", Num(r.without_outliers->p)},
                              {"n_effective", r.without_outliers->n_effective},
                              {"verdict", std::string(VerdictName(r.without_outliers->verdict))}}
             : nlohmann::json(nullptr)},
        {"confounded", r.confounded},
        {"confounders", r.confounders},
        {"verdict", std::string(VerdictName(r.verdict))},
        {"statistical_verdict", std::string(VerdictName(r.statistical_verdict))},
        {"reason", r.reason},
        {"n_needed", r.n_needed ? nlohmann::json(*r.n_needed) : nlohmann::json(nullptr)},
    });
  }
  nlohmann::json geo = nlohmann::json::array();
  for (const GeoMeanRow& g : result.geomean) {
    geo.push_back({{"metric", std::string(MetricName(g.metric))},
                   {"cells", g.cells},
                   {"delta_pct", Num(g.delta_pct)},
                   {"delta_ci_pct", Ci(g.delta_ci)},
                   {"verdict", std::string(VerdictName(g.verdict))}});
  }
  nlohmann::json excluded = nlohmann::json::array();
  for (const ExcludedRun& e : result.excluded) {
    excluded.push_back({{"run", e.run_id},
                        {"arm", e.arm},
                        {"host", e.host},
                        {"cell", e.cell},
                        {"order", e.order},
                        {"reasons", e.reasons},
                        {"kinds", e.kinds}});
  }
  return {
      {"usable", UsableJson(result.usable)},
      {"headline", result.usable.headline},
      {"arm_a", result.arm_a},
      {"arm_b", result.arm_b},
      {"compared_attributes", result.compared_attributes},
      {"seed", result.seed},
      {"bootstrap_resamples", result.bootstrap_resamples},
      {"alpha", result.alpha},
      {"outcome", std::string(OutcomeName(result.outcome))},
      {"outcome_reasons", result.outcome_reasons},
      {"rows", std::move(rows)},
      {"geomean", std::move(geo)},
      {"excluded", std::move(excluded)},
      {"ignored_runs", result.ignored_runs},
  };
}

std::string DumpHeadlineFirst(const nlohmann::json& j, int indent) {
  nlohmann::ordered_json out;
  for (const char* first : {"headline", "usable"}) {
    if (j.contains(first)) {
      out[first] = nlohmann::ordered_json::parse(
          j[first].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "headline" || it.key() == "usable") continue;
    out[it.key()] = nlohmann::ordered_json::parse(
        it.value().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RenderJson(const CompareResult& result, int indent) {
  return DumpHeadlineFirst(ToJson(result), indent);
}

std::string RenderMarkdown(const CompareResult& result) {
  const std::string& a = result.arm_a;
  const std::string& b = result.arm_b;
  std::string out = UsableMarkdown(result.usable);
  absl::StrAppend(&out, absl::StrFormat("## %s vs %s: %s\n\n", MdEscape(a), MdEscape(b),
                                        OutcomeName(result.outcome)));
  for (Metric m : kAllMetrics) {
    bool any = false;
    for (const Row& r : result.rows) any = any || r.metric == m;
    if (!any) continue;
    absl::StrAppend(&out, absl::StrFormat("### %s (%s is better)\n\n", MetricName(m),
                                          HigherIsBetter(m) ? "higher" : "lower"));
    absl::StrAppend(&out, "| cell | ", MdEscape(a), " median [95% CI] | ", MdEscape(b),
                    " median [95% CI] | Δ% [95% CI] | p | q | verdict | n ", MdEscape(a), "/",
                    MdEscape(b), " |\n");
    absl::StrAppend(&out, "|---|---:|---:|---:|---:|---:|---|---:|\n");
    for (const Row& r : result.rows) {
      if (r.metric != m) continue;
      absl::StrAppend(
          &out, absl::StrFormat(
                    "| %s | %s [%s, %s] | %s [%s, %s] | %s [%s, %s] | %s | %s | %s | %d/%d |\n",
                    MdEscape(r.cell), FormatValue(m, r.a.median), FormatValue(m, r.a.median_ci.lo),
                    FormatValue(m, r.a.median_ci.hi), FormatValue(m, r.b.median),
                    FormatValue(m, r.b.median_ci.lo), FormatValue(m, r.b.median_ci.hi),
                    FormatPct(r.delta_pct), FormatPct(r.delta_ci.lo), FormatPct(r.delta_ci.hi),
                    FormatP(r.p), FormatP(r.q), VerdictCell(r), r.a.n, r.b.n));
    }
    for (const GeoMeanRow& g : result.geomean) {
      if (g.metric != m) continue;
      absl::StrAppend(&out,
                      absl::StrFormat("| **geomean** | | | %s [%s, %s] | | | %s | %d cells |\n",
                                      FormatPct(g.delta_pct), FormatPct(g.delta_ci.lo),
                                      FormatPct(g.delta_ci.hi), VerdictName(g.verdict), g.cells));
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out,
                  absl::StrFormat("Bootstrap: %d resamples, seed %d. q: Benjamini-Hochberg "
                                  "over %d rows.\n",
                                  result.bootstrap_resamples, result.seed, result.rows.size()));
  if (!result.outcome_reasons.empty()) {
    absl::StrAppend(&out, "\nOutcome ", std::string(OutcomeName(result.outcome)), ":\n");
    for (const std::string& s : result.outcome_reasons)
      absl::StrAppend(&out, "- ", MdEscape(s), "\n");
  }
  if (!result.excluded.empty()) {
    absl::StrAppend(&out, "\nExcluded runs:\n");
    for (const ExcludedRun& e : result.excluded) {
      // Each reason with its kind unless the detail already starts with it
      // ("warmup: run R on H", "cancelled: run R"; "error=5" as it is).
      std::vector<std::string> why;
      for (size_t i = 0; i < e.reasons.size(); ++i) {
        const std::string kind = i < e.kinds.size() ? e.kinds[i] : "";
        why.push_back(kind.empty() || absl::StartsWith(e.reasons[i], kind)
                          ? e.reasons[i]
                          : absl::StrCat(kind, ": ", e.reasons[i]));
      }
      absl::StrAppend(&out, "- ", MdEscape(e.run_id), ": ", MdEscape(absl::StrJoin(why, ", ")),
                      "\n");
    }
  }
  bool header = false;
  for (const Row& r : result.rows) {
    for (const auto* arm : {&r.a, &r.b}) {
      for (const Outlier& o : arm->outliers) {
        if (!header) {
          absl::StrAppend(&out, "\nOutliers (flagged, kept):\n");
          header = true;
        }
        absl::StrAppend(&out, "- ", MdEscape(o.run_id), " ", std::string(MetricName(r.metric)),
                        " = ", FormatValue(r.metric, o.value), "\n");
      }
    }
  }
  bool conf_header = false;
  for (const Row& r : result.rows) {
    if (!r.confounded || r.metric != result.rows.front().metric) continue;
    if (!conf_header) {
      absl::StrAppend(&out, "\nConfounded cells:\n");
      conf_header = true;
    }
    absl::StrAppend(&out, "- ", MdEscape(r.cell), ": ",
                    MdEscape(absl::StrJoin(r.confounders, "; ")), "\n");
  }
  return out;
}

std::string RenderJUnitXml(const CompareResult& result) {
  int failures = 0, skipped = 0;
  for (const Row& r : result.rows) {
    failures += r.verdict == Verdict::kRegression;
    skipped += r.verdict == Verdict::kInconclusive || r.verdict == Verdict::kNoisy;
  }
  const int tests = static_cast<int>(result.rows.size()) + 1;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  // "--" may not appear inside an XML comment.
  absl::StrAppend(&out, "<!-- ",
                  absl::StrReplaceAll(XmlEscape(result.usable.headline), {{"--", "- -"}}),
                  " -->\n");
  absl::StrAppend(&out,
                  absl::StrFormat("<testsuites tests=\"%d\" failures=\"%d\">\n", tests, failures));
  absl::StrAppend(&out, absl::StrFormat("  <testsuite name=\"iofleet.compare\" tests=\"%d\" "
                                        "failures=\"%d\" errors=\"0\" skipped=\"%d\">\n",
                                        tests, failures, skipped));
  absl::StrAppend(&out, "    <testcase classname=\"iofleet.compare\" name=\"usable runs\">\n");
  absl::StrAppend(&out, "      <system-out>", XmlEscape(UsableMarkdown(result.usable)),
                  "</system-out>\n    </testcase>\n");
  for (const Row& r : result.rows) {
    absl::StrAppend(&out, absl::StrFormat("    <testcase classname=\"%s\" name=\"%s\">\n",
                                          XmlEscape(r.cell), MetricName(r.metric)));
    const std::string summary =
        absl::StrFormat("%s: delta %s%% [%s, %s], p %s, q %s, n %d/%d", VerdictName(r.verdict),
                        FormatPct(r.delta_pct), FormatPct(r.delta_ci.lo), FormatPct(r.delta_ci.hi),
                        FormatP(r.p), FormatP(r.q), r.a.n, r.b.n);
    if (r.verdict == Verdict::kRegression) {
      absl::StrAppend(
          &out, absl::StrFormat("      <failure message=\"%s\" type=\"regression\">%s</failure>\n",
                                XmlEscape(summary), XmlEscape(r.reason)));
    } else if (r.verdict == Verdict::kInconclusive || r.verdict == Verdict::kNoisy) {
      absl::StrAppend(&out, absl::StrFormat("      <skipped message=\"%s\"/>\n",
                                            XmlEscape(absl::StrCat(summary, "; ", r.reason))));
    }
    absl::StrAppend(&out, absl::StrFormat("      <system-out>%s; %s</system-out>\n",
                                          XmlEscape(summary), XmlEscape(r.reason)));
    absl::StrAppend(&out, "    </testcase>\n");
  }
  absl::StrAppend(&out, "  </testsuite>\n</testsuites>\n");
  return out;
}

}  // namespace iofleet::controller::compare
