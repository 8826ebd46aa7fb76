// stx/train/train_state.cpp — see train_state.h.
#include "stx/train/train_state.h"

#include "stx/core/error.h"

namespace stx {

nlohmann::json TrainState::to_json() const {
  const auto& w = window;
  return {
      {"step", step},
      {"data", {{"epoch", data.epoch}, {"index", data.index}}},
      {"guard", guard},
      {"lr_scale", lr_scale},
      {"best_valid", std::isfinite(best_valid) ? nlohmann::json(best_valid) : nlohmann::json(nullptr)},
      {"window",
       {{"loss", w.loss}, {"nll", w.nll}, {"tokens", w.tokens}, {"sentences", w.sentences}, {"updates", w.updates}}},
      {"skips_in_row", skips_in_row},
      {"rollbacks", rollbacks},
      {"world_size", world_size}};
}

TrainState TrainState::from_json(const nlohmann::json& j, const std::string& what) {
  TrainState s;
  try {
    s.step = j.at("step").get<int64_t>();
    s.data.epoch = j.at("data").at("epoch").get<int64_t>();
    s.data.index = j.at("data").at("index").get<int64_t>();
    s.guard = j.at("guard");
    s.lr_scale = j.at("lr_scale").get<double>();
    s.best_valid = j.at("best_valid").is_null() ? INFINITY : j.at("best_valid").get<double>();
    const auto& w = j.at("window");
    s.window.loss = w.at("loss").get<double>();
    s.window.nll = w.at("nll").get<double>();
    s.window.tokens = w.at("tokens").get<int64_t>();
    s.window.sentences = w.at("sentences").get<int64_t>();
    s.window.updates = w.at("updates").get<int64_t>();
    s.skips_in_row = j.value("skips_in_row", int64_t{0});
    s.rollbacks = j.value("rollbacks", int64_t{0});
    s.world_size = j.value("world_size", 1);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(what + ": metadata 'stx.train' is not a trainer state (" + std::string(e.what()) + ")");
  }
  return s;
}

void TrainState::rewind_to(const TrainState& saved) {
  step = saved.step;
  data = saved.data;
  guard = saved.guard;
  window = saved.window;
}

}  // namespace stx
