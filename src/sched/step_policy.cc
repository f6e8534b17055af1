#include "sched/step_policy.h"

#include <algorithm>

namespace llmd::sched {

namespace {

bool SitsOut(const SlotView& view, const StepPolicyOptions& options, uint64_t step) {
  if (view.request_class != RequestClass::kBackground) return false;
  switch (options.background) {
    case BackgroundAction::kRun: return false;
    case BackgroundAction::kPause: return true;
    case BackgroundAction::kThrottle: return step % std::max<uint64_t>(options.throttle_period, 1) != 0;
  }
  return false;
}

}  // namespace

StepChoice ChooseStep(const std::vector<SlotView>& busy, const StepPolicyOptions& options, uint64_t step) {
  std::vector<const SlotView*> ranked;
  for (const SlotView& view : busy) {
    if (!view.waiting && (view.generating || view.prefilling)) ranked.push_back(&view);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const SlotView* a, const SlotView* b) {
    if (a->request_class != b->request_class) return a->request_class < b->request_class;
    return a->admitted < b->admitted;
  });
  StepChoice choice;
  size_t running = 0;
  bool share = options.interactive_expected;  // lower classes share the step
  choice.shared_prefill_tokens = options.shared_prefill_tokens;
  for (const SlotView* view : ranked) {
    if (running >= options.decode_width || SitsOut(*view, options, step)) {
      choice.paused.push_back(view->slot);
      continue;
    }
    ++running;
    if (view->generating) choice.decode.push_back(view->slot);
    if (view->prefilling) {
      choice.prefill.push_back(view->slot);
      const bool below = share && view->request_class != RequestClass::kInteractive;
      choice.prefill_shared.push_back(below);
    }
    if (view->request_class == RequestClass::kInteractive) share = choice.interactive_runs = true;
  }
  return choice;
}

bool MayAdmit(RequestClass c, const std::vector<RequestClass>& busy, size_t decode_width) {
  const auto at_or_above = std::count_if(busy.begin(), busy.end(), [c](RequestClass b) { return b <= c; });
  return static_cast<size_t>(at_or_above) < decode_width;
}

}  // namespace llmd::sched
