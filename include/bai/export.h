// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Marks a symbol as part of libbai's public ABI; everything else is hidden.
#define BAI_EXPORT __attribute__((visibility("default")))
