// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Umbrella header: the whole public SDK.
#include "bai/admin_client.h"
#include "bai/client.h"
#include "bai/config.h"
#include "bai/copy_rule.h"
#include "bai/export.h"
#include "bai/options.h"
#include "bai/protocol/api_version.h"
#include "bai/protocol/errors.h"
#include "bai/protocol/pty_wire.h"
#include "bai/protocol/resource.h"
#include "bai/protocol/service_ports.h"
#include "bai/protocol/session_status.h"
#include "bai/protocol/signing.h"
#include "bai/session_client.h"
#include "bai/status.h"
#include "bai/transport.h"
#include "bai/version.h"
#include "bai/vfolder_client.h"
