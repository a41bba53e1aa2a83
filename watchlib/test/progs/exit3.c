/*
 * exit3: exits with status 3, which ulpt-watch must pass through (and put in its report).
 *
 *   ulpt-watch -w code/rw:  writes = 1 (code = 3), reads = 1 (return code)
 */
volatile int code;

int main(void)
{
	code = 3;
	return code;
}
