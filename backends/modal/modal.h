/* modal.h — the Modal backend (docs/backends/modal.md): cloud sandboxes through Modal's own
 * gRPC API with the operator's credentials (direct mode) or through a tool gateway's REST API
 * (managed mode). Loop thread only. */
#ifndef SANDBOXD_MODAL_H
#define SANDBOXD_MODAL_H

#include "backends/backend.h"

extern const struct backend_ops modal_backend_ops;

#endif
