#pragma once

// validate's remote side shows node output through base/text.h. agent.cc names the helper as
// internal::Visible; once it says text::Visible this header can go.

#include "gpuforge/base/text.h"

namespace gpuforge::validate::internal {

using text::Visible;

}  // namespace gpuforge::validate::internal
