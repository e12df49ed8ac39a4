// The run page's training curves: reads the run's metrics JSON, draws one Chart.js line chart
// per <figure class="chart" data-keys="a,b,prefix/*">, and while the run is active polls for
// the steps after the last one it holds (?since=) and appends them.
(function () {
  "use strict";
  const REFRESH_MS = 4000;
  const COLORS = ["#0b6bcb", "#1a7f37", "#cf222e", "#8250df", "#bf8700", "#0a7a8a", "#6e7781", "#e16f24"];

  function matches(patterns, key) {
    if (patterns.includes("!" + key)) return false;
    return patterns.some((p) => (p.endsWith("*") ? key.startsWith(p.slice(0, -1)) : key === p));
  }

  function datasets(figure, data) {
    const patterns = figure.dataset.keys.split(",");
    const keys = Object.keys(data.series).filter(
      (key) => matches(patterns, key) && data.series[key].some((v) => v !== null)
    );
    const sets = keys.map((key, i) => ({
      label: key,
      data: data.series[key],
      borderColor: COLORS[i % COLORS.length],
      backgroundColor: COLORS[i % COLORS.length],
      spanGaps: true, // validation numbers exist only at evaluation steps
      pointRadius: data.steps.length > 40 ? 0 : 2,
      borderWidth: 2,
      tension: 0.2,
    }));
    // Step 0 is the trainer's measure of its cold start, before any RL step: a flat dashed
    // line at that level, so that what RL added (or took) reads off the curve above it.
    if (data.steps[0] === 0) {
      keys.forEach((key, i) => {
        const level = data.series[key][0];
        if (level === null || level === undefined) return;
        sets.push({
          label: key + " after the cold start",
          data: data.steps.map(() => level),
          borderColor: COLORS[i % COLORS.length],
          borderDash: [6, 4],
          borderWidth: 1,
          pointRadius: 0,
        });
      });
    }
    return sets;
  }

  function draw(figure, data) {
    const sets = datasets(figure, data);
    figure.classList.toggle("has-data", sets.length > 0);
    if (!sets.length) return;
    if (figure.chart) {
      figure.chart.data.labels = data.steps;
      figure.chart.data.datasets = sets;
      figure.chart.update("none");
      return;
    }
    figure.chart = new Chart(figure.querySelector("canvas"), {
      type: "line",
      data: { labels: data.steps, datasets: sets },
      options: {
        animation: false,
        maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        scales: { x: { title: { display: true, text: "step" } } },
        plugins: { legend: { labels: { boxWidth: 12, font: { size: 11 } } } },
      },
    });
  }

  // Adds the steps of a later answer to what the page holds; a key first seen now is null
  // at the earlier steps (and an earlier key null at the new ones).
  function append(held, fresh) {
    const before = held.steps.length;
    const added = fresh.steps.length;
    const keys = new Set([...Object.keys(held.series), ...Object.keys(fresh.series)]);
    keys.forEach((key) => {
      const old = held.series[key] || new Array(before).fill(null);
      held.series[key] = old.concat(fresh.series[key] || new Array(added).fill(null));
    });
    held.steps = held.steps.concat(fresh.steps);
    held.active = fresh.active;
    return held;
  }

  async function refresh(root) {
    // The first load gets the whole run (averaged down to a few hundred points); each poll
    // after it asks only for the steps after the last one it holds, and appends them.
    const held = root.metrics;
    const url = new URL(root.dataset.metricsUrl, window.location.href);
    if (held && held.steps.length) url.searchParams.set("since", held.steps[held.steps.length - 1]);
    let data;
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(response.status);
      data = await response.json();
    } catch (error) {
      setTimeout(() => refresh(root), REFRESH_MS * 2); // a blip: try again, more slowly
      return;
    }
    root.metrics = held ? append(held, data) : data;
    if (!held || data.steps.length) {
      root.querySelectorAll("figure.chart").forEach((figure) => draw(figure, root.metrics));
    }
    root.dataset.steps = String(root.metrics.steps.length);
    root.dataset.lastStep = String(root.metrics.steps[root.metrics.steps.length - 1] ?? "");
    root.dataset.loaded = "true";
    if (data.active) setTimeout(() => refresh(root), REFRESH_MS);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const root = document.getElementById("charts");
    if (root && window.Chart) refresh(root);
  });
})();
