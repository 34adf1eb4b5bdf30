/* Each public C header compiles on its own, as strict C11 and as C++ (the
   build defines HEADER to one of them). */
#include HEADER
int main(void) { return 0; }
