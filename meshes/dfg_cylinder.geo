// The DFG flow past a cylinder (Schäfer & Turek 1996, benchmarks 2D-1 and 2D-2): a channel
// 2.2 × 0.41 with a cylinder of radius 0.05 centred at (0.2, 0.2), triangles refined towards
// the cylinder. fem navier-stokes' benchmark (docs/flow.md): inflow on "inlet", no-slip on
// "walls" and "cylinder", do-nothing "outlet".
h = 0.04;    // far field
hc = 0.008;  // on the cylinder
Point(1) = {0, 0, 0, h}; Point(2) = {2.2, 0, 0, h}; Point(3) = {2.2, 0.41, 0, h}; Point(4) = {0, 0.41, 0, h};
Point(5) = {0.2, 0.2, 0, hc}; Point(6) = {0.25, 0.2, 0, hc}; Point(7) = {0.2, 0.25, 0, hc};
Point(8) = {0.15, 0.2, 0, hc}; Point(9) = {0.2, 0.15, 0, hc};
Line(1) = {1, 2}; Line(2) = {2, 3}; Line(3) = {3, 4}; Line(4) = {4, 1};
Circle(5) = {6, 5, 7}; Circle(6) = {7, 5, 8}; Circle(7) = {8, 5, 9}; Circle(8) = {9, 5, 6};
Curve Loop(1) = {1, 2, 3, 4};
Curve Loop(2) = {5, 6, 7, 8};
Plane Surface(1) = {1, 2};
// Finer in the wake.
Field[1] = Box; Field[1].VIn = 0.015; Field[1].VOut = h; Field[1].XMin = 0.1; Field[1].XMax = 1.0;
Field[1].YMin = 0.08; Field[1].YMax = 0.33; Field[1].Thickness = 0.1;
Field[2] = Distance; Field[2].CurvesList = {5, 6, 7, 8};
Field[3] = Threshold; Field[3].InField = 2; Field[3].SizeMin = hc; Field[3].SizeMax = h;
Field[3].DistMin = 0.0; Field[3].DistMax = 0.15;
Field[4] = Min; Field[4].FieldsList = {1, 3};
Background Field = 4;
Mesh.CharacteristicLengthExtendFromBoundary = 0;
Physical Curve("walls", 1) = {1, 3};
Physical Curve("outlet", 2) = {2};
Physical Curve("inlet", 3) = {4};
Physical Curve("cylinder", 4) = {5, 6, 7, 8};
Physical Surface("fluid", 10) = {1};
