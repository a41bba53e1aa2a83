#include "trace/trace-target_i386_ulpt.h"
