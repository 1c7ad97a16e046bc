/* fuzz_shell.c — libFuzzer target: the shell-state parser (backends/shell_state.c) on arbitrary
 * bytes, as a command could write them into its state file. Crashes, leaks and sanitizer
 * reports are failures; so is a parse that succeeds with more than SHELL_VARS_MAX variables or
 * a variable longer than SHELL_VAR_MAX. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/shell.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One input; a prefix "sandboxd-state 2\0" is added to half of them to get past the header. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char hdr[] = "sandboxd-state 2";
        struct shell_state st;
        char *why, *blob = malloc(sizeof(hdr) + size);
        size_t len = size;
        const char *k;
        json_t *v;

        if (size && (data[0] & 1)) {
                memcpy(blob, hdr, sizeof(hdr));
                memcpy(blob + sizeof(hdr), data + 1, size - 1);
                len = sizeof(hdr) + size - 1;
        } else {
                memcpy(blob, data, size);
        }
        if (shell_state_parse(blob, len, &st, &why) == 0) {
                if (json_object_size(st.env) > SHELL_VARS_MAX)
                        abort();
                json_object_foreach(st.env, k, v) if (strlen(k) + 1 + json_string_length(v) >
                                                      SHELL_VAR_MAX) abort();
                shell_state_clear(&st);
        } else {
                free(why);
        }
        free(blob);
        return 0;
}
