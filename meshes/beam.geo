// A slender cantilever beam, 10 × 1, structured quadrilaterals (40 × 4): the first bending mode
// carries most of the mass, so a released tip swings at its period (fem dynamics' tests).
Point(1) = {0, 0, 0}; Point(2) = {10, 0, 0}; Point(3) = {10, 1, 0}; Point(4) = {0, 1, 0};
Line(1) = {1, 2}; Line(2) = {2, 3}; Line(3) = {3, 4}; Line(4) = {4, 1};
Curve Loop(1) = {1, 2, 3, 4};
Plane Surface(1) = {1};
Transfinite Curve{1, 3} = 41; Transfinite Curve{2, 4} = 5;
Transfinite Surface{1};
Recombine Surface{1};
Physical Curve("bottom", 1) = {1};
Physical Curve("right", 2) = {2};
Physical Curve("top", 3) = {3};
Physical Curve("left", 4) = {4};
Physical Surface("beam", 10) = {1};
