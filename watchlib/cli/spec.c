/*
 * ulpt-watch: -w specs (SYMBOL[:LEN][/mode] or 0xADDR:LEN[/mode]).
 *
 * SPDX-License-Identifier: MIT
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void parse_spec(const char *spec, struct watch *w)
{
	char *body = xstrdup(spec), *slash, *colon;

	memset(w, 0, sizeof(*w));
	w->spec = spec;
	w->mode = MODE_W;
	/* Neither symbol names nor numbers contain '/', so the last one starts the mode. */
	slash = strrchr(body, '/');
	if (slash) {
		*slash = '\0';
		if (wl_parse_mode(slash + 1, &w->mode))
			die("malformed watch '%s': mode must be r, w or rw", spec);
	}
	if (body[0] >= '0' && body[0] <= '9') {
		/* An address: C symbol names cannot start with a digit. */
		if (body[0] != '0' || (body[1] != 'x' && body[1] != 'X'))
			die("malformed watch '%s': an address is written 0xADDR:LEN", spec);
		colon = strchr(body, ':');
		if (!colon)
			die("malformed watch '%s': an address needs a length (0xADDR:LEN)", spec);
		*colon = '\0';
		if (wl_parse_u64(body, &w->addr))
			die("malformed watch '%s': bad address '%s'", spec, body);
		if (wl_parse_u64(colon + 1, &w->len))
			die("malformed watch '%s': bad length '%s'", spec, colon + 1);
		w->have_len = 1;
	} else {
		/* A symbol; the last ':' (raw symbol-table names have none) starts LEN. */
		colon = strrchr(body, ':');
		if (colon) {
			*colon = '\0';
			if (wl_parse_u64(colon + 1, &w->len))
				die("malformed watch '%s': bad length '%s'", spec, colon + 1);
			w->have_len = 1;
		}
		if (!body[0])
			die("malformed watch '%s': empty symbol name", spec);
		w->symbol = xstrdup(body);
	}
	if (w->have_len && w->len == 0)
		die("malformed watch '%s': the length must be at least 1", spec);
	if (!w->symbol && (w->addr > USER_ADDR_END || w->len > USER_ADDR_END - w->addr))
		die("malformed watch '%s': the range ends above user space (0x%llx)", spec,
		    USER_ADDR_END);
	free(body);
}
