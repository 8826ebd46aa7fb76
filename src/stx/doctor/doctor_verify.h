// stx/doctor/doctor_verify.h — `stx doctor verify`: are the prescriptions right? Every held-out
// run that failed in the atlas (doctor_fit.h's split) is judged from its first K updates; where
// the doctor prescribes, the run is trained again, whole, with the prescription's --set applied
// (DIR/runs/NAME, resumable: rerunning the command continues; a rerun recorded in
// DIR/prescriptions.json without its directory is taken from there), and read as the atlas reads its
// runs (trains / stalls / diverges). Writes DIR/prescriptions.json and DIR/prescriptions.md:
// how many of the held-out failures the doctor flagged, prescribed for, and how many then train.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stx::doctor {

struct VerifyOptions {
  std::string atlas_dir, data, model, out, exe, command;
  std::vector<int64_t> train_depths{6, 24};
  std::vector<std::string> holdout_schemes;
  int jobs = 2;
  bool quiet = false;
};

int verify(const VerifyOptions& o);

// Whether a row of an earlier prescriptions.json was run with these --set overrides: a rerun
// counts only for the prescription it ran with (a refit that changes it makes the case run again).
bool same_prescription(const nlohmann::json& stored_row, const std::vector<std::string>& overrides);

}  // namespace stx::doctor
