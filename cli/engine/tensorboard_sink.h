// The run's TensorBoard event file (docs/tensorboard.md): every metrics.jsonl
// row goes here too. The numeric fields of a row that is a point
// (curves::is_point: a periodic row, or the final "stop" row) become scalars
// tagged with their names at the row's "frames"; a row with an "event" key
// becomes text tagged "event/<name>" (the row's JSON) at its frames, or at the
// frames of the last row that had them (the stop row is both); the resolved
// config is text "config" at step 0.
//
//   TensorboardSink tb(run_dir, scripts::to_lua(cfg));   // a new event file
//   metrics.set_listener([&tb](const engine::MetricsRow& r) { tb.row(r); });
//   tb.flush();   // at each log tick: written and fsync'd
//
// Failures: none thrown; the writer logs once and stops (observe/tfevents_writer.h).
// Thread-safety: none; the control thread owns it.
#pragma once

#include <cstdint>
#include <string>

#include "engine/run/metrics_log.h"
#include "observe/tfevents_writer.h"

namespace moonseed::cli {

class TensorboardSink {
 public:
  TensorboardSink(const std::string& run_dir, const std::string& config_text);

  void row(const engine::MetricsRow& row);
  void flush() { writer_.flush(); }
  const std::string& path() const { return writer_.path(); }

 private:
  observe::TfEventsWriter writer_;
  int64_t frames_ = 0;  // the last row's frames: the step of rows without them
};

}  // namespace moonseed::cli
