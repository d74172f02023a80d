#pragma once
namespace ordo {
const char* version();
}
