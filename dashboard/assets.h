// The dashboard's web files, built into the binary (dashboard/embed_assets.cmake):
// index.html, dashboard.js, dashboard.css, and uPlot's uPlot.iife.min.js and
// uPlot.min.css when npm fetched them at configure time.
// Thread-safety: constant data.
#pragma once

#include <cstddef>
#include <vector>

namespace moonseed::dashboard {

struct Asset {
  const char* name;  // file name, e.g. "dashboard.js"
  const unsigned char* data;
  size_t size;
};

const std::vector<Asset>& assets();

}  // namespace moonseed::dashboard
