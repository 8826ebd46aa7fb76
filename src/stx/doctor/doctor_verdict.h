// stx/doctor/doctor_verdict.h — the doctor's verdict on the first K updates of a run: the
// predicted outcome with its probability, the evidence (each signal against the runs that
// trained and the runs that failed), the mechanism in one line and a prescription with concrete
// values (docs/doctor.md). A run outside the fitted regime or signal ranges is not judged.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/doctor/doctor_model.h"
#include "stx/doctor/doctor_signals.h"

namespace stx::doctor {

struct Evidence {
  std::string signal;
  double value = 0;
  double contribution = 0;  // to the logit of P(fails)
  bool outside = false;     // beyond the fitted range
};

struct Prescription {
  std::string text;                    // one line per change
  std::vector<std::string> overrides;  // the --set assignments
};

struct Verdict {
  bool judged = true;
  std::string not_judged;  // why not
  std::string outcome;     // trains | stalls | diverges
  bool observed = false;   // it diverged during the probe
  double p_fail = 0, p_diverge = 0;
  int64_t step = 0;  // of the line read
  std::string scheme_row;
  std::vector<Evidence> evidence;  // strongest first
  std::string mechanism;
  Prescription rx;
};

// The scheme table's row a config is (post, pre-qknorm, …), "" if none.
std::string scheme_row_of(const Config& c);

Verdict judge(const DoctorModel& m, const Config& c, const Early& e, int64_t horizon);
nlohmann::json to_json(const Verdict& v);
std::string render(const Verdict& v, const DoctorModel& m);

}  // namespace stx::doctor
