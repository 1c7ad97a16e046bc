/* singularity.h — the singularity backend (Apptainer / SingularityCE instances). */
#ifndef SANDBOXD_SINGULARITY_H
#define SANDBOXD_SINGULARITY_H

#include "backends/backend.h"

extern const struct backend_ops singularity_backend_ops;

#endif
